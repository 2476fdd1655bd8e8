import { availableParallelism } from 'node:os';
import proxyAddr from '@fastify/proxy-addr';
import { ENVIRONMENTS, type Environment } from './domain/api-key.js';
import { DEFAULT_STORE_TIMEOUT_MS } from './store/deadline.js';
import { parseDatabaseUrl } from './store/open.js';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Everything the service reads from its environment, validated once at start. */
export interface Config {
  port: number;
  host: string;
  databaseUrl: string;
  /** Which key prefix this instance accepts: production keys and staging keys are told apart by it. */
  environment: Environment;
  /** Production base URL, ending in /v1 (OpenAPI `servers`); unset, the document names no host. */
  publicBaseUrl: string | undefined;
  /** Staging base URL, ending in /v1 (OpenAPI `servers`); unset, the document names no host. */
  stagingBaseUrl: string | undefined;
  logLevel: LogLevel;
  /** Largest request body in bytes (413 beyond). */
  bodyLimit: number;
  /** Time a client has to send a whole request, in ms. */
  requestTimeoutMs: number;
  /** Failed authentications allowed per client address per minute before 429. */
  authFailuresPerMinute: number;
  /** Whose X-Forwarded-For is believed: nobody's (false), the nearest N hops, or proxies at these addresses/CIDRs; never every hop. */
  trustProxy: false | number | string;
  /** How long a graceful shutdown waits for in-flight requests, in ms. */
  shutdownTimeoutMs: number;
  /** PATCH without If-Match is 428 precondition_required (off by default: the spec's clients send none). */
  requireIfMatch: boolean;
  /** The longest a request waits on the store, in ms (503 beyond). */
  storeTimeoutMs: number;
  /** Open connections per process at most; at the cap the longest-idle one is closed for a new one (503 when none is idle). */
  maxConnections: number;
  /** How long an idle keep-alive connection stays open, in ms. */
  keepAliveTimeoutMs: number;
  /** After SIGTERM/SIGINT, how long the service keeps answering (each answer closing its connection) before it stops listening, in ms. */
  shutdownDrainMs: number;
  /** Port of the Prometheus /metrics server; undefined: no metrics server (0: any free port). */
  metricsPort: number | undefined;
  /** Address the metrics server listens on (loopback by default: metrics are for the operator, not the clients). */
  metricsHost: string;
  /** Exact origins (scheme://host[:port]) a browser may call the API from; empty: no CORS. */
  corsOrigins: readonly string[];
  /** Requests per API key per minute before 429; 0: no limit. */
  rateLimitPerMinute: number;
  /** Redis shared by every instance and worker for the rate limit's counts; undefined: counts per process. */
  redisUrl: string | undefined;
  /** Prefix of every Redis key the service writes, so services or environments can share one Redis. */
  redisKeyPrefix: string;
  /** Event-loop delay in ms past which requests are shed with 503; 0: never. */
  maxEventLoopDelayMs: number;
  /** Most live idempotency records one API key may hold; a PATCH with a new Idempotency-Key beyond is 429. */
  idempotencyRecordsPerKey: number;
  /** History rows older than this many days are deleted in the background (each entry's newest kept); 0 keeps all. */
  historyRetentionDays: number;
}

/** One line per setting: the README's configuration table mirrors it. */
export const CONFIG_VARIABLES = {
  PORT: 'port',
  HOST: 'host',
  DATABASE_URL: 'databaseUrl',
  INVENTORY_ENV: 'environment',
  PUBLIC_BASE_URL: 'publicBaseUrl',
  STAGING_BASE_URL: 'stagingBaseUrl',
  LOG_LEVEL: 'logLevel',
  BODY_LIMIT: 'bodyLimit',
  REQUEST_TIMEOUT_MS: 'requestTimeoutMs',
  AUTH_FAILURES_PER_MINUTE: 'authFailuresPerMinute',
  TRUST_PROXY: 'trustProxy',
  SHUTDOWN_TIMEOUT_MS: 'shutdownTimeoutMs',
  REQUIRE_IF_MATCH: 'requireIfMatch',
  STORE_TIMEOUT_MS: 'storeTimeoutMs',
  MAX_CONNECTIONS: 'maxConnections',
  KEEP_ALIVE_TIMEOUT_MS: 'keepAliveTimeoutMs',
  SHUTDOWN_DRAIN_MS: 'shutdownDrainMs',
  METRICS_PORT: 'metricsPort',
  METRICS_HOST: 'metricsHost',
  CORS_ORIGINS: 'corsOrigins',
  RATE_LIMIT_PER_MINUTE: 'rateLimitPerMinute',
  REDIS_URL: 'redisUrl',
  REDIS_KEY_PREFIX: 'redisKeyPrefix',
  MAX_EVENT_LOOP_DELAY_MS: 'maxEventLoopDelayMs',
  IDEMPOTENCY_RECORDS_PER_KEY: 'idempotencyRecordsPerKey',
  HISTORY_RETENTION_DAYS: 'historyRetentionDays',
} as const satisfies Record<string, keyof Config>;

export type ConfigVariable = keyof typeof CONFIG_VARIABLES;

export const DEFAULT_DATABASE_URL = 'sqlite:./data/inventory.db';

/** A setting that cannot be used; the message names the variable and what it accepts. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/**
 * Builds the config from environment variables, with `overrides` (command-line flags, keyed by
 * variable name) taking precedence. Throws ConfigError naming the first bad setting.
 */
export function loadConfig(
  env: Readonly<Record<string, string | undefined>>,
  overrides: Partial<Record<ConfigVariable, string>> = {},
): Config {
  const get = (name: ConfigVariable): string | undefined => {
    const value = overrides[name] ?? env[name];
    return value === undefined || value.trim() === '' ? undefined : value.trim();
  };
  const port = integer('PORT', get('PORT'), 8080, 0, 65535);
  const config: Config = {
    port,
    host: get('HOST') ?? '0.0.0.0',
    databaseUrl: databaseUrl(get('DATABASE_URL') ?? DEFAULT_DATABASE_URL),
    environment: oneOf('INVENTORY_ENV', get('INVENTORY_ENV'), ENVIRONMENTS, 'production'),
    publicBaseUrl: baseUrl('PUBLIC_BASE_URL', get('PUBLIC_BASE_URL')),
    stagingBaseUrl: baseUrl('STAGING_BASE_URL', get('STAGING_BASE_URL')),
    logLevel: oneOf('LOG_LEVEL', get('LOG_LEVEL'), LOG_LEVELS, 'info'),
    bodyLimit: byteSize('BODY_LIMIT', get('BODY_LIMIT'), 16 * 1024),
    requestTimeoutMs: integer('REQUEST_TIMEOUT_MS', get('REQUEST_TIMEOUT_MS'), 10_000, 1, 3_600_000),
    authFailuresPerMinute: integer('AUTH_FAILURES_PER_MINUTE', get('AUTH_FAILURES_PER_MINUTE'), 30, 1, 1_000_000),
    trustProxy: trustProxy(get('TRUST_PROXY')),
    shutdownTimeoutMs: integer('SHUTDOWN_TIMEOUT_MS', get('SHUTDOWN_TIMEOUT_MS'), 10_000, 0, 3_600_000),
    requireIfMatch: oneOf('REQUIRE_IF_MATCH', get('REQUIRE_IF_MATCH'), ['true', 'false'], 'false') === 'true',
    storeTimeoutMs: integer('STORE_TIMEOUT_MS', get('STORE_TIMEOUT_MS'), DEFAULT_STORE_TIMEOUT_MS, 100, 300_000),
    maxConnections: integer('MAX_CONNECTIONS', get('MAX_CONNECTIONS'), 10_000, 1, 1_000_000),
    keepAliveTimeoutMs: integer('KEEP_ALIVE_TIMEOUT_MS', get('KEEP_ALIVE_TIMEOUT_MS'), 72_000, 1, 3_600_000),
    shutdownDrainMs: integer('SHUTDOWN_DRAIN_MS', get('SHUTDOWN_DRAIN_MS'), 5_000, 0, 3_600_000),
    metricsPort: get('METRICS_PORT') === undefined ? undefined : integer('METRICS_PORT', get('METRICS_PORT'), 0, 0, 65535),
    metricsHost: get('METRICS_HOST') ?? '127.0.0.1',
    corsOrigins: corsOrigins(get('CORS_ORIGINS')),
    rateLimitPerMinute: integer('RATE_LIMIT_PER_MINUTE', get('RATE_LIMIT_PER_MINUTE'), 6000, 0, 1_000_000_000),
    redisUrl: redisUrl(get('REDIS_URL')),
    redisKeyPrefix: redisKeyPrefix(get('REDIS_KEY_PREFIX')),
    maxEventLoopDelayMs: integer('MAX_EVENT_LOOP_DELAY_MS', get('MAX_EVENT_LOOP_DELAY_MS'), 1000, 0, 60_000),
    idempotencyRecordsPerKey: integer('IDEMPOTENCY_RECORDS_PER_KEY', get('IDEMPOTENCY_RECORDS_PER_KEY'), 10_000, 1, 10_000_000),
    historyRetentionDays: integer('HISTORY_RETENTION_DAYS', get('HISTORY_RETENTION_DAYS'), 0, 0, 36_500),
  };
  return config;
}

function integer(name: string, raw: string | undefined, fallback: number, min: number, max: number): number {
  if (raw === undefined) return fallback;
  const value = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be a whole number from ${min} to ${max}, got "${raw}"`);
  }
  return value;
}

function oneOf<T extends string>(name: string, raw: string | undefined, allowed: readonly T[], fallback: T): T {
  if (raw === undefined) return fallback;
  if (!(allowed as readonly string[]).includes(raw)) {
    throw new ConfigError(`${name} must be one of ${allowed.join(', ')}, got "${raw}"`);
  }
  return raw as T;
}

function baseUrl(name: string, raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  const url = URL.canParse(raw) ? new URL(raw) : undefined;
  if (!url || !/^https?:$/.test(url.protocol) || !url.pathname.endsWith('/v1') || url.search || url.hash) {
    throw new ConfigError(`${name} must be an absolute http(s) URL ending in /v1, got "${raw}"`);
  }
  return raw;
}

const SIZE_UNITS: Record<string, number> = { '': 1, b: 1, kb: 1000, kib: 1024, k: 1024, mb: 1e6, mib: 1048576, m: 1048576 };

function byteSize(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined) return fallback;
  const match = /^(\d+)\s*([a-z]*)$/i.exec(raw);
  const unit = match ? SIZE_UNITS[match[2]!.toLowerCase()] : undefined;
  const value = match && unit !== undefined ? Number(match[1]) * unit : NaN;
  if (!Number.isSafeInteger(value) || value < 1 || value > 64 * 1048576) {
    throw new ConfigError(`${name} must be a size from 1 byte to 64MiB, such as 16384 or 16KiB, got "${raw}"`);
  }
  return value;
}

function databaseUrl(raw: string): string {
  try {
    parseDatabaseUrl(raw);
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
  return raw;
}

/** A comma-separated list of exact origins, each as a browser sends it in Origin: scheme, host and port only. */
function corsOrigins(raw: string | undefined): string[] {
  if (raw === undefined) return [];
  return raw.split(',').map((part) => {
    const origin = part.trim();
    let parsed: URL | undefined;
    try {
      parsed = new URL(origin);
    } catch {
      parsed = undefined;
    }
    // `*` is refused: the list is what this service trusts, named one by one.
    if (!parsed || !/^https?:$/.test(parsed.protocol) || parsed.origin !== origin) {
      throw new ConfigError(`CORS_ORIGINS must be a comma-separated list of origins such as https://shop.example or http://localhost:3000 (no path, no trailing slash), got "${origin}"`);
    }
    return origin;
  });
}

/**
 * TRUST_PROXY: false, a hop count, or proxy addresses/CIDRs (and proxy-addr's names loopback,
 * linklocal, uniquelocal). Trusting every hop is refused: X-Forwarded-For would be the client's to
 * write, so rotating it escapes the failed-authentication throttle and names any address to lock out.
 */
function trustProxy(raw: string | undefined): false | number | string {
  if (raw === undefined || raw === 'false') return false;
  if (/^\d+$/.test(raw)) return integer('TRUST_PROXY', raw, 0, 0, 100);
  const entries = raw.split(',').map((s) => s.trim());
  if (raw.toLowerCase() === 'true' || entries.some((e) => /\/0+$/.test(e))) {
    throw new ConfigError(
      `TRUST_PROXY=${raw} would trust every hop: any client could write its own X-Forwarded-For, escape the ` +
        'failed-authentication throttle by rotating it and lock out an address of its choosing. Set the number of ' +
        'proxies in front of the service (such as 1), or their addresses or CIDRs (such as 10.0.0.0/8).',
    );
  }
  try {
    proxyAddr.compile(entries);
  } catch (err) {
    throw new ConfigError(`TRUST_PROXY must be false, a hop count, or comma-separated proxy addresses or CIDRs: ${(err as Error).message}`);
  }
  return raw;
}

function redisUrl(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  const url = URL.canParse(raw) ? new URL(raw) : undefined;
  // Never echo the value: it may hold a password.
  if (!url || !/^rediss?:$/.test(url.protocol) || !url.hostname) throw new ConfigError('REDIS_URL must be redis://[USER:PASSWORD@]HOST[:PORT][/DB] or rediss://...');
  return raw;
}

function redisKeyPrefix(raw: string | undefined): string {
  if (raw === undefined) return 'petstore-inventory:';
  if (!/^[\x21-\x7e]{1,64}$/.test(raw)) throw new ConfigError(`REDIS_KEY_PREFIX must be 1 to 64 printable ASCII characters without spaces, got "${raw}"`);
  return raw;
}

/** One process, no cluster: what `serve` did before --workers, and the least surprising default. */
export const DEFAULT_WORKERS = 1;
export const MAX_WORKERS = 64;
/**
 * `--workers` / WORKERS (`name` says which, for the message): a whole number from 1 to
 * MAX_WORKERS, or `auto` for one per available CPU. Throws ConfigError naming it.
 */
export function parseWorkers(name: string, raw: string | undefined): number {
  const value = raw?.trim();
  if (value === undefined || value === '') return DEFAULT_WORKERS;
  if (value === 'auto') return Math.min(availableParallelism(), MAX_WORKERS);
  const count = /^\d+$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(count) || count < 1 || count > MAX_WORKERS) {
    throw new ConfigError(`${name} must be a whole number from 1 to ${MAX_WORKERS}, or "auto" (one per CPU), got "${raw}"`);
  }
  return count;
}
