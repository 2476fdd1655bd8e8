import { createServer, type Server } from 'node:http';
import type { Writable } from 'node:stream';
import Fastify, { LogController, type FastifyInstance } from 'fastify';
import { TypeBoxValidatorCompiler } from '@fastify/type-provider-typebox';
import { Authenticator } from './auth/authenticator.js';
import { FailureThrottle } from './auth/throttle.js';
import { ListCache } from './cache/list-cache.js';
import type { Config } from './config.js';
import { answerUndecodableUrl, handleClientError, registerErrorHandling } from './http/errors.js';
import { fastLane, type FastLaneStats, type RequestHandler } from './http/fast-lane.js';
import { registerPipeline } from './http/fastify-pipeline.js';
import { registerJsonBodyParser } from './http/json-body.js';
import { collectRouteMethods, registerMethodNotAllowed } from './http/method-not-allowed.js';
import { buildOpenApiDocument } from './openapi/document.js';
import { IDEMPOTENCY_PURGE_INTERVAL_MS } from './operations/idempotency.js';
import { OPERATIONS } from './operations/index.js';
import { clientAddressReader } from './pipeline/client-address.js';
import { RequestPipeline, type Rule } from './pipeline/pipeline.js';
import { standardRules } from './pipeline/rules.js';
import { healthRoutes } from './routes/health.js';
import { historyRoutes } from './routes/history.js';
import { inventoryRoutes } from './routes/inventory.js';
import { openApiRoutes } from './routes/openapi.js';
import type { InventoryStore } from './store/store.js';

declare module 'fastify' {
  interface FastifyInstance {
    store: InventoryStore;
    /** Requests answered by the fast lane rather than Fastify's routes. */
    fastLane: FastLaneStats;
  }
}

export interface AppOptions {
  config: Config;
  /** The app owns the store from here on and closes it when it closes. */
  store: InventoryStore;
  /** Where JSON logs go (default stdout); tests pass a stream to read them. */
  logStream?: Writable;
  /** The request rules, given the standard ones in their order (default: those); both lanes apply what this returns. */
  rules?: (standard: readonly Rule[]) => readonly Rule[];
}

/** Builds the service as a Fastify instance that never listens; server.ts does. */
export async function buildApp({ config, store, logStream, rules }: AppOptions): Promise<FastifyInstance> {
  let closing = false;
  // Set once the app is built; until then every request goes to Fastify.
  let handle: RequestHandler | undefined = undefined;
  let fastifyHandler: RequestHandler;
  const app: FastifyInstance = Fastify({
    // Fastify's own HTTP/1 server, with the fast lane (src/http/fast-lane.ts) in front of its handler.
    // (With a server factory Fastify binds one address: HOST=localhost listens on the first it resolves to.)
    serverFactory: (handler, options) => {
      fastifyHandler = handler;
      const server: Server = createServer(options.http ?? {}, (req, res) => (handle ?? handler)(req, res));
      server.keepAliveTimeout = options.keepAliveTimeout as number;
      server.requestTimeout = options.requestTimeout as number;
      server.setTimeout(options.connectionTimeout as number);
      return server;
    },
    logger: {
      level: config.logLevel,
      redact: { paths: ['req.headers.authorization', 'req.headers.cookie'], censor: '[redacted]' },
      // The pipeline writes each request's `req` field in its final form, the same in both lanes (not a Fastify request).
      serializers: { req: (view) => ({ ...view }) },
      ...(logStream ? { stream: logStream } : {}),
    },
    genReqId: (req) => pipeline.requestIdOf(req),
    // The pipeline logs each request's arrival and completion, in both lanes alike.
    logController: new LogController({ requestIdLogLabel: 'requestId', disableRequestLogging: true }),
    bodyLimit: config.bodyLimit,
    requestTimeout: config.requestTimeoutMs,
    // Node checks for timed-out requests every 30 s by default; check often enough to keep the limit.
    http: { connectionsCheckingInterval: Math.min(1000, Math.max(50, Math.floor(config.requestTimeoutMs / 4))) },
    // The pipeline's shutting-down rule answers 503 in the Error shape while closing.
    return503OnClosing: false,
    clientErrorHandler: handleClientError,
    frameworkErrors: (_err, request, reply) => answerUndecodableUrl(pipeline, request, reply),
    routerOptions: { maxParamLength: 1000 },
  });

  const authenticator = new Authenticator(store, config.environment, (err) => app.log.warn({ err }, 'could not record key use'));
  const throttle = new FailureThrottle(config.authFailuresPerMinute);
  const standard = standardRules({ isClosing: () => closing, throttle, authenticator });
  const pipeline = new RequestPipeline(rules ? rules(standard) : standard, {
    clientAddress: clientAddressReader(config.trustProxy),
    log: app.log,
    logRequests: ['info', 'debug', 'trace'].includes(config.logLevel),
  });
  const listCache = new ListCache(store);

  app.setValidatorCompiler(TypeBoxValidatorCompiler);
  app.decorate('store', store);
  app.decorate('fastLane', { answered: 0 } satisfies FastLaneStats);
  // Expired idempotency records are only dead weight (a lookup ignores them): drop them now and then.
  const purge = setInterval(() => {
    store.purgeIdempotencyRecords(new Date()).catch((err: unknown) => app.log.warn({ err }, 'could not purge idempotency records'));
  }, IDEMPOTENCY_PURGE_INTERVAL_MS).unref();
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onClose', async () => {
    clearInterval(purge);
    await store.close();
  });

  registerPipeline(app, pipeline);
  registerJsonBodyParser(app);
  registerErrorHandling(app, pipeline, config.bodyLimit);

  const methodsByPath = collectRouteMethods(app);
  const document = buildOpenApiDocument(OPERATIONS, {
    productionUrl: config.publicBaseUrl,
    stagingUrl: config.stagingBaseUrl,
    bodyLimit: config.bodyLimit,
  });
  await app.register(healthRoutes);
  await app.register(openApiRoutes(JSON.stringify(document)));
  await app.register(inventoryRoutes({ requireIfMatch: config.requireIfMatch, listCache }));
  await app.register(historyRoutes);
  registerMethodNotAllowed(app, methodsByPath);

  handle = fastLane({ pipeline, listCache, store, bodyLimit: config.bodyLimit, requireIfMatch: config.requireIfMatch }, app.fastLane, fastifyHandler!);
  return app;
}
