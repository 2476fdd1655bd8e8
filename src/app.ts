import type { Writable } from 'node:stream';
import Fastify, { LogController, type FastifyInstance } from 'fastify';
import { TypeBoxValidatorCompiler } from '@fastify/type-provider-typebox';
import { Authenticator } from './auth/authenticator.js';
import { FailureThrottle } from './auth/throttle.js';
import type { Config } from './config.js';
import { ApiError } from './errors.js';
import { authenticateRequest, registerAuthentication } from './http/auth.js';
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
  const app: FastifyInstance = Fastify({
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
    reply.header('x-content-type-options', 'nosniff');
    // Stock is per-store data: a shared cache must never keep it (PD 6.1).
    if (request.principal && !reply.hasHeader('cache-control')) reply.header('cache-control', 'private, no-cache');
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
  await app.register(inventoryRoutes({ requireIfMatch: config.requireIfMatch }));
  await app.register(historyRoutes);
  registerMethodNotAllowed(app, methodsByPath);

  return app;
}
