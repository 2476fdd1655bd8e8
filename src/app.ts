import { createServer, type Server } from 'node:http';
import type { Writable } from 'node:stream';
import Fastify, { LogController, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { Authenticator } from './auth/authenticator.js';
import { FailureThrottle } from './auth/throttle.js';
import { EventHub } from './cache/event-hub.js';
import { ListCache } from './cache/list-cache.js';
import type { Config } from './config.js';
import { scheduleExpiry } from './expiry-timer.js';
import { schedulePruning } from './prune-timer.js';
import { ConnectionManager } from './http/connections.js';
import { answerUndecodableUrl, registerErrorHandling } from './http/errors.js';
import { eventStreamPort, EventStreams } from './http/event-streams.js';
import { fastLane, type FastLaneStats, type RequestHandler } from './http/fast-lane.js';
import { registerPipeline } from './http/fastify-pipeline.js';
import { UNIT_MS } from './domain/duration.js';
import { EventRelay } from './relay/relay.js';
import { DEFAULT_STREAM } from './relay/subjects.js';
import { registerJsonBodyParser } from './http/json-body.js';
import { collectRouteMethods, registerMethodNotAllowed } from './http/method-not-allowed.js';
import { measuredStore } from './metrics/measured-store.js';
import type { ServiceMetrics } from './metrics/service-metrics.js';
import { EventLoopDelay } from './limits/event-loop-delay.js';
import { RateLimiter } from './limits/rate-limiter.js';
import { serviceDocument } from './openapi/service-document.js';
import type { OperationDependencies } from './operations/handler.js';
import { OPERATIONS } from './operations/index.js';
import { compileSchemaValidator } from './operations/schema-validator.js';
import { clientAddressReader } from './pipeline/client-address.js';
import { RequestPipeline, type Rule } from './pipeline/pipeline.js';
import { standardRules } from './pipeline/rules.js';
import { dashboardRoutes } from './routes/dashboard.js';
import { docsRoutes } from './routes/docs.js';
import { healthRoutes } from './routes/health.js';
import { registerOperations } from './routes/operations.js';
import type { Store } from './store/store.js';
import { WebhookDispatcher } from './webhooks/dispatcher.js';
import { WebhookSender } from './webhooks/sender.js';

declare module 'fastify' {
  interface FastifyInstance {
    store: Store;
    /** Requests answered by the fast lane rather than Fastify's routes. */
    fastLane: FastLaneStats;
    /** The server's connections: the cap, one request at a time per connection, the body timeout, the drain. */
    connections: ConnectionManager;
    /** This instance's webhook deliveries. */
    webhookDispatcher: WebhookDispatcher;
    /** Turns a request's key into its principal, from a cache of recent lookups. */
    authenticator: Authenticator;
  }
}

export interface AppOptions {
  config: Config;
  /** The app owns the store from here on and closes it when it closes. */
  store: Store;
  /** Where JSON logs go (default stdout); tests pass a stream to read them. */
  logStream?: Writable;
  /** The request rules, given the standard ones in their order (default: those); both lanes apply what this returns. */
  rules?: (standard: readonly Rule[]) => readonly Rule[];
  /** Where the app reports its metrics (METRICS_PORT set); the app owns them from here on. Without, nothing is measured. */
  metrics?: ServiceMetrics;
  /** The built dashboard that /dashboard serves (index.html, assets/); default the project's dist/dashboard. */
  dashboardDirectory?: string;
  /** How often an idle event stream gets a comment line, in ms (default 15 s; tests shorten it). */
  eventHeartbeatMs?: number;
}

/** Builds the service as a Fastify instance that never listens; server.ts does. */
export async function buildApp({ config, store: given, logStream, rules, metrics, dashboardDirectory, eventHeartbeatMs }: AppOptions): Promise<FastifyInstance> {
  const store = metrics ? measuredStore(given, metrics) : given;
  let closing = false;
  // Set once the app is built; until then every request goes to Fastify.
  let handle: RequestHandler | undefined = undefined;
  let fastifyHandler: RequestHandler;
  const connections = new ConnectionManager({
    maxConnections: config.maxConnections,
    requestTimeoutMs: config.requestTimeoutMs,
    // A request may wait on the store twice: for its key, then for its operation.
    answerTimeoutMs: config.requestTimeoutMs + 2 * config.storeTimeoutMs,
    warn: (fields, message) => app.log.warn(fields, message),
  });
  const app: FastifyInstance = Fastify({
    // Fastify's own HTTP/1 server, with the fast lane (src/http/fast-lane.ts) in front of its handler,
    // and the connection manager (src/http/connections.ts) in front of both.
    // (With a server factory Fastify binds one address: HOST=localhost listens on the first it resolves to.)
    serverFactory: (handler, options) => {
      fastifyHandler = handler;
      const server: Server = createServer(options.http ?? {});
      connections.attach(server, (req, res) => (handle ?? handler)(req, res));
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
    keepAliveTimeout: config.keepAliveTimeoutMs,
    http: {
      // Node checks for timed-out requests every 30 s by default; check often enough to keep the limit.
      connectionsCheckingInterval: Math.min(1000, Math.max(50, Math.floor(config.requestTimeoutMs / 4))),
      // Node would answer a request without Host itself (400, empty body); the pipeline answers it after authentication.
      requireHostHeader: false,
    },
    // The pipeline's shutting-down rule answers 503 in the Error shape while closing.
    return503OnClosing: false,
    clientErrorHandler: (err: NodeJS.ErrnoException, socket) => connections.clientError(err, socket),
    frameworkErrors: (_err, request, reply) => answerUndecodableUrl(pipeline, request, reply),
    routerOptions: { maxParamLength: 1000 },
    // Fastify's default compilers would load Ajv and fast-json-stringify (some hundred modules) at every start, unused.
    schemaController: { compilersFactory: COMPILERS },
  });

  const authenticator = new Authenticator(store.keys, config.environment, (err) => app.log.warn({ err }, 'could not record key use'));
  const throttle = new FailureThrottle(config.authFailuresPerMinute);
  const loopDelay = config.maxEventLoopDelayMs > 0 ? new EventLoopDelay(config.maxEventLoopDelayMs) : undefined;
  // The Redis client is loaded only when REDIS_URL asks for it: some forty modules every other start does without.
  const sharedAllowances =
    config.rateLimitPerMinute > 0 && config.redisUrl
      ? (await import('./limits/redis-allowances.js')).redisAllowances(config.redisUrl, config.redisKeyPrefix, app.log)
      : undefined;
  const rateLimiter = config.rateLimitPerMinute > 0 ? new RateLimiter(config.rateLimitPerMinute, sharedAllowances) : undefined;
  const standard = standardRules({ isClosing: () => closing, throttle, authenticator, loopDelay, rateLimiter, corsOrigins: config.corsOrigins });
  const pipeline = new RequestPipeline(rules ? rules(standard) : standard, {
    clientAddress: clientAddressReader(config.trustProxy),
    log: app.log,
    logRequests: ['info', 'debug', 'trace'].includes(config.logLevel),
    ...(metrics && { observer: metrics }),
  });
  const listCache = new ListCache(store.entries, { timeoutMs: config.storeTimeoutMs, observer: metrics?.listCache });
  metrics?.countEntriesWith(() => listCache.entries());
  const hub = new EventHub(store.events, {
    onError: (err) => app.log.warn({ err }, 'could not read the event log; the streams wait for the next read'),
    ...(metrics && { observer: metrics.eventHub }),
  });
  const streams = new EventStreams(config.maxEventStreams, { hub, events: store.events }, {
    ...(eventHeartbeatMs !== undefined && { heartbeatMs: eventHeartbeatMs }),
    onError: (err) => app.log.warn({ err }, 'an event stream could not read the log; it ends, and its client reconnects'),
  });
  if (metrics) {
    metrics.followEvents({ hub, streams: () => streams.size });
    hub.followAlways();
    metrics.followWebhooks(store);
    metrics.followReservations(store.reservations);
  }
  // Every instance (and worker) delivers to the endpoints whose lease it holds: none, some or all.
  const sender = new WebhookSender({ timeoutMs: config.webhookTimeoutMs, allowPrivate: config.webhooksAllowPrivate });
  const dispatcher = new WebhookDispatcher({
    deliveries: store.webhookDeliveries,
    events: store.events,
    send: (url, message) => sender.send(url, message),
    schedule: config.webhookRetrySchedule,
    leaseMs: config.webhookLeaseMs,
    log: app.log,
    ...(metrics && { observer: metrics.webhooks }),
    cancelSends: () => sender.close(),
    busy: () => connections.answering > 0,
  });
  // With EVENTS_NATS_URL, every instance (and worker) runs a relay; the one holding its lease publishes.
  const natsUrl = config.eventsNatsUrl;
  const relay =
    natsUrl === undefined
      ? undefined
      : new EventRelay({
          name: DEFAULT_STREAM,
          relays: store.relays,
          events: store.events,
          // Loaded only here: a server without EVENTS_NATS_URL never loads the NATS client.
          open: async () =>
            (await import('./relay/nats-stream.js')).openNatsStream({
              url: natsUrl,
              stream: DEFAULT_STREAM,
              maxAgeMs: config.eventsNatsMaxAgeDays * UNIT_MS.d,
              onStatus: (status) => app.log.info({ status }, `event relay: connection to NATS ${status}`),
            }),
          log: app.log,
          ...(metrics && { observer: metrics.relay }),
        });

  app.decorate('store', store);
  app.decorate('fastLane', { answered: 0 } satisfies FastLaneStats);
  app.decorate('connections', connections);
  app.decorate('webhookDispatcher', dispatcher);
  app.decorate('authenticator', authenticator);
  const purge = schedulePruning(store, config, app.log);
  const expiry = scheduleExpiry(store.reservations, app.log, undefined, metrics?.reservations);
  app.addHook('preClose', async () => {
    closing = true;
    // Before the server closes: it waits for every open answer, and a stream never ends by itself.
    streams.close();
    hub.close();
    connections.closeIdle();
    // Before the store closes: the attempt in flight is recorded, and the leases are given up for another instance.
    await dispatcher.close();
    await relay?.close();
  });
  app.addHook('onClose', async () => {
    purge.stop();
    expiry.stop();
    connections.close();
    metrics?.close();
    loopDelay?.close();
    await rateLimiter?.close();
    await store.close();
  });

  registerPipeline(app, pipeline);
  registerJsonBodyParser(app);
  registerErrorHandling(app, pipeline, config.bodyLimit);

  const methodsByPath = collectRouteMethods(app);
  const document = serviceDocument(config);
  // The pages and probes that are not operations of the API.
  for (const routes of [healthRoutes, docsRoutes(document), dashboardRoutes({ directory: dashboardDirectory })]) await app.register(routes);
  const changeOptions = { requireIfMatch: config.requireIfMatch, idempotencyRecordsPerKey: config.idempotencyRecordsPerKey };
  const dependencies: OperationDependencies = {
    store,
    listCache,
    changeOptions,
    batchMaxChanges: config.batchMaxChanges,
    reservationLimits: { maxItems: config.reservationMaxItems, ttlSeconds: config.reservationTtlSeconds },
    openApiDocumentJson: JSON.stringify(document),
    eventStreams: eventStreamPort(streams, connections),
  };
  registerOperations(app, OPERATIONS, {
    dependencies,
    pipeline,
    limits: config,
    rateLimiter,
  });
  registerMethodNotAllowed(app, methodsByPath);

  handle = fastLane({ pipeline, dependencies, bodyLimit: config.bodyLimit }, app.fastLane, fastifyHandler!);
  dispatcher.start();
  relay?.start();
  return app;
}

/** Our schema compilers, typed as Fastify's Ajv-based ones, which it would load otherwise: ours take the same route schemas. */
const COMPILERS = { buildValidator: () => compileSchemaValidator, buildSerializer: () => noResponseSchemas } as unknown as NonNullable<
  NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']
>;

/** The serializer compiler: no route declares a response schema, since every answer is written by the pipeline (sendAnswer). */
function noResponseSchemas(): never {
  throw new Error('response schemas are not used: answers are written by the pipeline (sendAnswer)');
}
