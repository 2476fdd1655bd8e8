import { ENVIRONMENTS } from '../domain/api-key.js';
import { DEFAULT_STORE_TIMEOUT_MS } from '../store/deadline.js';
import type { Setting } from './setting.js';
import { trustProxy } from './trust-proxy.js';
import { baseUrl, databaseUrl, directDatabaseUrl, natsUrl, origins, redisUrl } from './urls.js';
import { boolean, byteSize, delayList, integer, matching, oneOf, text } from './values.js';
import { workerCount } from './workers.js';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export const DEFAULT_DATABASE_URL = 'sqlite:./data/inventory.db';

/**
 * Every setting, once: the environment variable, the Config member it fills (`key`), what its text
 * may be with its default and bounds (`value`), one line of doc, and the `serve` flag that
 * overrides it. Config, loadConfig, `serve --help` and docs/settings.md all come from this table:
 * a new setting is a new row, then `npm run docs:settings`. loadConfig reads the rows in this
 * order, so the first bad one is the one its error names.
 */
export const SETTINGS = {
  PORT: {
    key: 'port',
    value: integer({ default: 8080, min: 0, max: 65535 }),
    doc: 'TCP port to listen on',
    flag: { name: 'port', placeholder: 'N' },
  },
  HOST: {
    key: 'host',
    value: text({ default: '0.0.0.0', accepts: 'an IP address or a host name' }),
    doc: 'address to listen on',
    flag: { name: 'host', placeholder: 'HOST' },
  },
  DATABASE_URL: {
    key: 'databaseUrl',
    value: databaseUrl({ default: DEFAULT_DATABASE_URL }),
    doc: 'the store: a SQLite file (its PATH relative to the working directory, or absolute), or PostgreSQL for several instances on one database',
    flag: { name: 'database-url', placeholder: 'URL' },
    example: 'postgres://inventory:secret@db.internal:5432/inventory',
  },
  DATABASE_DIRECT_URL: {
    key: 'databaseDirectUrl',
    value: directDatabaseUrl(),
    doc: "with DATABASE_URL through a transaction-mode pooler (PgBouncer), the same PostgreSQL database reached directly, for migrations and for hearing other instances' changes at once; unset, both use DATABASE_URL, and through such a pooler other instances' changes reach the streams by polling (within a fraction of a second). Its `?schema=` is ignored: DATABASE_URL's applies",
    example: 'postgres://inventory:secret@db.internal:5432/inventory',
  },
  INVENTORY_ENV: {
    key: 'environment',
    value: oneOf(ENVIRONMENTS, { default: 'production' }),
    doc: 'which key prefix this instance accepts: production keys and staging keys are told apart by it',
  },
  PUBLIC_BASE_URL: {
    key: 'publicBaseUrl',
    value: baseUrl(),
    doc: 'production base URL, listed in the OpenAPI `servers`; with neither base URL set, `servers` holds the relative `/v1`: the host that serves the document',
    example: 'https://inventory.example/v1',
  },
  STAGING_BASE_URL: {
    key: 'stagingBaseUrl',
    value: baseUrl(),
    doc: 'staging base URL, listed in the OpenAPI `servers`',
    example: 'https://inventory.staging.example/v1',
  },
  LOG_LEVEL: {
    key: 'logLevel',
    value: oneOf(LOG_LEVELS, { default: 'info' }),
    doc: 'the least severe level of log line written',
    flag: { name: 'log-level', placeholder: 'LEVEL' },
  },
  BODY_LIMIT: {
    key: 'bodyLimit',
    value: byteSize({ default: 16 * 1024 }),
    doc: 'largest request body, in bytes or with a unit (`413` beyond)',
    example: '1MiB',
  },
  BATCH_MAX_CHANGES: {
    key: 'batchMaxChanges',
    value: integer({ default: 1000, min: 1, max: 100_000 }),
    doc: 'most changes in one `POST /v1/inventory/batch` (`400 invalid_body` beyond); that route takes a body of up to 256 bytes per change, or `BODY_LIMIT` when larger',
  },
  RESERVATION_MAX_ITEMS: {
    key: 'reservationMaxItems',
    value: integer({ default: 100, min: 1, max: 10_000 }),
    doc: 'most items (distinct pets) in one `POST /v1/reservations` (`400 invalid_body` beyond)',
  },
  RESERVATION_TTL_SECONDS: {
    key: 'reservationTtlSeconds',
    value: integer({ default: 900, min: 1, max: 86_400 }),
    doc: 'how long a reservation holds its stock when its request names no `ttlSeconds`, in seconds',
  },
  REQUEST_TIMEOUT_MS: {
    key: 'requestTimeoutMs',
    value: integer({ default: 10_000, min: 1, max: 3_600_000 }),
    doc: 'time a client has to send a whole request, headers and body, in ms (`408 request_timeout` beyond, and the connection closes)',
  },
  AUTH_FAILURES_PER_MINUTE: {
    key: 'authFailuresPerMinute',
    value: integer({ default: 30, min: 1, max: 1_000_000 }),
    doc: 'failed authentications per client address per minute before `429`',
  },
  TRUST_PROXY: {
    key: 'trustProxy',
    value: trustProxy(),
    doc:
      "behind a load balancer, whom to trust for the client's address in `X-Forwarded-For`: the nearest N proxies (up to 100), " +
      'or the proxies at these addresses or CIDRs (`loopback`, `linklocal` and `uniquelocal` name those ranges). `true` is refused: ' +
      'any client could write its own `X-Forwarded-For`, escape the failed-authentication throttle and lock out an address of its choosing',
    example: '10.0.0.0/8,loopback',
  },
  SHUTDOWN_TIMEOUT_MS: {
    key: 'shutdownTimeoutMs',
    value: integer({ default: 10_000, min: 0, max: 3_600_000 }),
    doc: 'how long a graceful shutdown waits for in-flight requests, after the drain, in ms',
  },
  REQUIRE_IF_MATCH: {
    key: 'requireIfMatch',
    value: boolean({ default: false }),
    doc: "`true`: a PATCH without `If-Match` is `428 precondition_required` (off by default: the spec's clients send none)",
  },
  STORE_TIMEOUT_MS: {
    key: 'storeTimeoutMs',
    value: integer({ default: DEFAULT_STORE_TIMEOUT_MS, min: 100, max: 300_000 }),
    doc: "the longest a request waits on the store, in ms: past it, `503 service_unavailable` with `Retry-After: 1`; also PostgreSQL's `statement_timeout`",
  },
  MAX_CONNECTIONS: {
    key: 'maxConnections',
    value: integer({ default: 10_000, min: 1, max: 1_000_000 }),
    doc: 'open connections per process; at the cap the longest-idle keep-alive connection is closed to admit a new one (never one accepted under a second ago and not yet answered), and with none such the new one gets `503`',
  },
  KEEP_ALIVE_TIMEOUT_MS: {
    key: 'keepAliveTimeoutMs',
    value: integer({ default: 72_000, min: 1, max: 3_600_000 }),
    doc: "how long an idle keep-alive connection stays open, in ms; longer than a load balancer's usual 60 s, so the balancer closes first",
  },
  SHUTDOWN_DRAIN_MS: {
    key: 'shutdownDrainMs',
    value: integer({ default: 5_000, min: 0, max: 3_600_000 }),
    doc: 'after `SIGTERM`/`SIGINT`, how long at most the service keeps answering (each answer with `Connection: close`, `/readyz` 503) before it stops listening, in ms: less once no connection is left, none with none open; `0` skips the drain',
  },
  SHUTDOWN_MIN_DRAIN_MS: {
    key: 'shutdownMinDrainMs',
    value: integer({ default: 0, min: 0, max: 3_600_000 }),
    doc: 'after `SIGTERM`/`SIGINT`, how long at least the drain lasts (`/readyz` 503, every request answered, the listener open), in ms, even with no connection open and over `SHUTDOWN_DRAIN_MS`: set it above the time a load balancer takes to see a `503` (its check interval times its fall count), so it stops sending before the instance stops listening; `0` (default): the drain may end at once',
  },
  METRICS_PORT: {
    key: 'metricsPort',
    value: integer({ default: undefined, min: 0, max: 65535 }),
    doc: 'port of the Prometheus `GET /metrics` server, apart from the API (`0`: any free port, logged); unset, there is no metrics server and nothing is measured at all',
    example: '9464',
  },
  METRICS_HOST: {
    key: 'metricsHost',
    value: text({ default: '127.0.0.1', accepts: 'an IP address or a host name' }),
    doc: 'address the metrics server listens on: loopback, since metrics need no key; `0.0.0.0` only where nothing but the scraper can reach that port',
  },
  CORS_ORIGINS: {
    key: 'corsOrigins',
    value: origins(),
    doc: 'exact origins whose browser apps may call the API; unset, no CORS (decisions 6.4)',
    example: 'https://shop.example,http://localhost:3000',
  },
  RATE_LIMIT_PER_MINUTE: {
    key: 'rateLimitPerMinute',
    value: integer({ default: 6000, min: 0, max: 1_000_000_000 }),
    doc: 'requests per API key per minute before `429 rate_limited`; `0` turns the limit off',
  },
  REDIS_URL: {
    key: 'redisUrl',
    value: redisUrl(),
    doc: "Redis through which every instance and worker shares the rate limit's counts; unset, each process counts alone",
    example: 'redis://:secret@redis.internal:6379/2',
  },
  REDIS_KEY_PREFIX: {
    key: 'redisKeyPrefix',
    value: matching(/^[\x21-\x7e]{1,64}$/, { default: 'petstore-inventory:', accepts: '1 to 64 printable ASCII characters without spaces' }),
    doc: 'prefix of every key the service writes in Redis, so several services or environments can share one',
    example: 'inventory-staging:',
  },
  MAX_EVENT_LOOP_DELAY_MS: {
    key: 'maxEventLoopDelayMs',
    value: integer({ default: 1000, min: 0, max: 60_000 }),
    doc: 'event-loop delay, in ms, past which requests are shed with `503` until the loop catches up; `0` turns shedding off',
  },
  IDEMPOTENCY_RECORDS_PER_KEY: {
    key: 'idempotencyRecordsPerKey',
    value: integer({ default: 10_000, min: 1, max: 10_000_000 }),
    doc: "most live idempotency records one API key may hold; a PATCH with a new `Idempotency-Key` beyond is `429 rate_limited`, with `Retry-After` until the key's oldest record expires",
  },
  MAX_EVENT_STREAMS: {
    key: 'maxEventStreams',
    value: integer({ default: 1000, min: 0, max: 1_000_000 }),
    doc: 'open event streams (`GET /v1/events/stream`) per process; a stream beyond is `503 service_unavailable`; `0` turns streams off (the feed stays)',
  },
  HISTORY_RETENTION_DAYS: {
    key: 'historyRetentionDays',
    value: integer({ default: 0, min: 0, max: 36_500 }),
    doc: "days of change history to keep; older rows are deleted every hour, except each entry's newest. `0` keeps everything",
  },
  EVENTS_RETENTION_DAYS: {
    key: 'eventsRetentionDays',
    value: integer({ default: 7, min: 0, max: 36_500 }),
    doc: 'days of change events the feed keeps; older ones are deleted every hour, and a reader behind them must reload the list. `0` keeps everything',
  },
  WEBHOOK_TIMEOUT_MS: {
    key: 'webhookTimeoutMs',
    value: integer({ default: 10_000, min: 100, max: 300_000 }),
    doc: 'how long a webhook receiver has to answer a delivery with `2xx`, in ms, connecting and reading its answer included; past it the attempt failed and is retried',
  },
  WEBHOOK_RETRY_SCHEDULE: {
    key: 'webhookRetrySchedule',
    value: delayList({ default: '5s,5m,30m,2h,5h,10h,14h,20h,24h', maxItems: 50 }),
    doc: "the waits before each retry of a failed webhook delivery (a `429`'s or `503`'s `Retry-After` instead, up to a day); when every retry failed, the endpoint is disabled",
  },
  WEBHOOKS_ALLOW_PRIVATE: {
    key: 'webhooksAllowPrivate',
    value: boolean({ default: false }),
    doc: 'allow webhook URLs that use `http` or reach a loopback, private, link-local, multicast or unspecified address (receivers inside the store\'s own network); by default only `https` to public addresses',
  },
  WEBHOOK_LEASE_MS: {
    key: 'webhookLeaseMs',
    value: integer({ default: 15_000, min: 1000, max: 600_000 }),
    doc: 'how long an instance holds the delivery to a webhook endpoint without renewing it (renewed every third of it); when the instance dies, another takes the endpoint over within about four thirds of this (20 s by default)',
  },
  EVENTS_NATS_URL: {
    key: 'eventsNatsUrl',
    value: natsUrl(),
    doc: 'NATS server with JetStream to which every change event is published, in seq order, on the stream `INVENTORY_EVENTS` (subjects `inventory.events.<type>`), by one instance at a time; unset, nothing is published',
    example: 'nats://inventory:secret@nats.internal:4222',
  },
  EVENTS_NATS_MAX_AGE_DAYS: {
    key: 'eventsNatsMaxAgeDays',
    value: integer({ default: 7, min: 0, max: 36_500 }),
    doc: 'days the stream `INVENTORY_EVENTS` keeps a message (set on the stream at every start); `0` keeps everything',
  },
  // No key: only `serve` reads it; the other commands run in one process whatever it says.
  WORKERS: {
    value: workerCount({ default: 1 }),
    doc: 'processes serving on the one port',
    flag: { name: 'workers', placeholder: 'N|auto' },
  },
} as const satisfies Record<string, Setting>;
