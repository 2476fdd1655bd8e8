import { createServer, type Server } from 'node:http';
import type { Writable } from 'node:stream';
import Fastify, { LogController, type FastifyInstance } from 'fastify';
import { TypeBoxValidatorCompiler } from '@fastify/type-provider-typebox';
import { Authenticator } from './auth/authenticator.js';
import { FailureThrottle } from './auth/throttle.js';
import type { Config } from './config.js';
import { ApiError } from './errors.js';
import { ListCache } from './cache/list-cache.js';
import { authenticateRequest, registerAuthentication } from './http/auth.js';
import { fastLane, type FastLaneStats, type RequestHandler } from './http/fast-lane.js';
import { NOSNIFF, PRIVATE_CACHE_CONTROL } from './http/response-headers.js';
import { badUrlError, handleClientError, registerErrorHandling, sendApiError } from './http/errors.js';
import { IDEMPOTENCY_PURGE_INTERVAL_MS } from './http/idempotency.js';
import { registerJsonBodyParser } from './http/json-body.js';
import { collectRouteMethods, registerMethodNotAllowed } from './http/method-not-allowed.js';
import { requestIdFor } from './http/request-id.js';
import { buildOpenApiDocument } from './openapi/document.js';
import { healthRoutes } from './routes/health.js';
import { OPERATIONS } from './routes/index.js';
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
}

/** Builds the service as a Fastify instance that never listens; server.ts does. */
export async function buildApp({ config, store, logStream }: AppOptions): Promise<FastifyInstance> {
  const authenticator = new Authenticator(store, config.environment, (err) => app.log.warn({ err }, 'could not record key use'));
  const throttle = new FailureThrottle(config.authFailuresPerMinute);
  const listCache = new ListCache(store);
  // Set once the app is built; until then (and behind a proxy at LOG_LEVEL info) every request goes to Fastify.
  let handle: RequestHandler | undefined;
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
      ...(logStream ? { stream: logStream } : {}),
    },
    genReqId: requestIdFor,
    logController: new LogController({ requestIdLogLabel: 'requestId' }),
    bodyLimit: config.bodyLimit,
    requestTimeout: config.requestTimeoutMs,
    // Node checks for timed-out requests every 30 s by default; check often enough to keep the limit.
    http: { connectionsCheckingInterval: Math.min(1000, Math.max(50, Math.floor(config.requestTimeoutMs / 4))) },
    // Fastify accepts a hop count at run time; its typings omit number.
    trustProxy: config.trustProxy as boolean | string,
    // Our own onRequest hook answers 503 in the Error shape while closing.
    return503OnClosing: false,
    clientErrorHandler: handleClientError,
    // A URL the router cannot decode: still authentication first (PD 2.2), then 400 or 404.
    frameworkErrors: (_err, request, reply) => {
      reply.header('x-request-id', request.id);
      authenticateRequest(request, authenticator, throttle).then(
        () => sendApiError(reply, badUrlError(request.url)),
        (err: unknown) => sendApiError(reply, err instanceof ApiError ? err : new ApiError('service_unavailable')),
      );
    },
    routerOptions: { maxParamLength: 1000 },
  });
  app.setValidatorCompiler(TypeBoxValidatorCompiler);
  app.decorate('store', store);
  app.decorate('fastLane', { answered: 0 } satisfies FastLaneStats);
  // Expired idempotency records are only dead weight (a lookup ignores them): drop them now and then.
  const purge = setInterval(() => {
    store.purgeIdempotencyRecords(new Date()).catch((err: unknown) => app.log.warn({ err }, 'could not purge idempotency records'));
  }, IDEMPOTENCY_PURGE_INTERVAL_MS).unref();
  app.addHook('onClose', async () => {
    clearInterval(purge);
    await store.close();
  });

  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
    if (closing) {
      reply.header('connection', 'close');
      throw new ApiError('service_unavailable', 'The service is shutting down; retry on another instance.', { 'retry-after': '1' });
    }
  });
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-content-type-options', NOSNIFF);
    if (request.principal && !reply.hasHeader('cache-control')) reply.header('cache-control', PRIVATE_CACHE_CONTROL);
  });

  registerAuthentication(app, authenticator, throttle);
  registerJsonBodyParser(app);
  registerErrorHandling(app, config.bodyLimit);

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

  // The lane needs the client address only for the info lines of each request; behind a proxy
  // (TRUST_PROXY) that address comes from forwarded headers, which only Fastify reads.
  const logRequests = ['info', 'debug', 'trace'].includes(config.logLevel);
  // A hop count of 0 trusts no proxy, as false does.
  const behindProxy = config.trustProxy !== false && config.trustProxy !== 0;
  if (!behindProxy || !logRequests) {
    const options = { authenticator, throttle, listCache, store, log: app.log, logRequests, behindProxy, bodyLimit: config.bodyLimit, requireIfMatch: config.requireIfMatch };
    handle = fastLane({ ...options, isClosing: () => closing }, app.fastLane, fastifyHandler!);
  }

  return app;
}
