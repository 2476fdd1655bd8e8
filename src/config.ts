import { availableParallelism } from 'node:os';
import { ENVIRONMENTS, type Environment } from './domain/api-key.js';
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
  /** Production base URL, ending in /v1 (OpenAPI `servers`). */
  publicBaseUrl: string;
  /** Staging base URL, ending in /v1 (OpenAPI `servers`). */
  stagingBaseUrl: string;
  logLevel: LogLevel;
  /** Largest request body in bytes (413 beyond). */
  bodyLimit: number;
  /** Time a client has to send a whole request, in ms. */
  requestTimeoutMs: number;
  /** Failed authentications allowed per client address per minute before 429. */
  authFailuresPerMinute: number;
  /** Fastify trustProxy: false, true, a hop count, or addresses/CIDRs of trusted proxies. */
  trustProxy: boolean | number | string;
  /** How long a graceful shutdown waits for in-flight requests, in ms. */
  shutdownTimeoutMs: number;
  /** PATCH without If-Match is 428 precondition_required (off by default: the spec's clients send none). */
  requireIfMatch: boolean;
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
  const localBase = `http://localhost:${port}/v1`;
  const config: Config = {
    port,
    host: get('HOST') ?? '0.0.0.0',
    databaseUrl: databaseUrl(get('DATABASE_URL') ?? DEFAULT_DATABASE_URL),
    environment: oneOf('INVENTORY_ENV', get('INVENTORY_ENV'), ENVIRONMENTS, 'production'),
    publicBaseUrl: baseUrl('PUBLIC_BASE_URL', get('PUBLIC_BASE_URL') ?? localBase),
    stagingBaseUrl: baseUrl('STAGING_BASE_URL', get('STAGING_BASE_URL') ?? localBase),
    logLevel: oneOf('LOG_LEVEL', get('LOG_LEVEL'), LOG_LEVELS, 'info'),
    bodyLimit: byteSize('BODY_LIMIT', get('BODY_LIMIT'), 16 * 1024),
    requestTimeoutMs: integer('REQUEST_TIMEOUT_MS', get('REQUEST_TIMEOUT_MS'), 10_000, 1, 3_600_000),
    authFailuresPerMinute: integer('AUTH_FAILURES_PER_MINUTE', get('AUTH_FAILURES_PER_MINUTE'), 30, 1, 1_000_000),
    trustProxy: trustProxy(get('TRUST_PROXY')),
    shutdownTimeoutMs: integer('SHUTDOWN_TIMEOUT_MS', get('SHUTDOWN_TIMEOUT_MS'), 10_000, 0, 3_600_000),
    requireIfMatch: oneOf('REQUIRE_IF_MATCH', get('REQUIRE_IF_MATCH'), ['true', 'false'], 'false') === 'true',
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

function baseUrl(name: string, raw: string): string {
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    url = undefined;
  }
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

function trustProxy(raw: string | undefined): boolean | number | string {
  if (raw === undefined || raw === 'false') return false;
  if (raw === 'true') return true;
  if (/^\d+$/.test(raw)) return Number(raw);
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
