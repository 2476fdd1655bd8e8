import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.js';
import { parseDatabaseUrl } from '../../src/store/open.js';

test('defaults: port 8080, SQLite under ./data, production, 16 KiB bodies', () => {
  const c = loadConfig({});
  assert.equal(c.port, 8080);
  assert.equal(c.host, '0.0.0.0');
  assert.equal(c.databaseUrl, 'sqlite:./data/inventory.db');
  assert.equal(c.environment, 'production');
  assert.equal(c.bodyLimit, 16384);
  assert.equal(c.logLevel, 'info');
  assert.equal(c.publicBaseUrl, undefined, 'unset: the document names no host');
  assert.equal(c.stagingBaseUrl, undefined);
  assert.equal(c.trustProxy, false);
});

test('environment variables are read and flags (overrides) win', () => {
  const c = loadConfig(
    { PORT: '9000', INVENTORY_ENV: 'staging', BODY_LIMIT: '32KiB', LOG_LEVEL: 'warn', TRUST_PROXY: '1', PUBLIC_BASE_URL: 'https://x.example/v1' },
    { PORT: '9100' },
  );
  assert.equal(c.port, 9100);
  assert.equal(c.environment, 'staging');
  assert.equal(c.bodyLimit, 32768);
  assert.equal(c.logLevel, 'warn');
  assert.equal(c.trustProxy, 1);
  assert.equal(c.publicBaseUrl, 'https://x.example/v1');
  assert.equal(c.stagingBaseUrl, undefined);
});

test('a bad value stops with a message naming the variable', () => {
  const cases: [Record<string, string>, RegExp][] = [
    [{ PORT: 'abc' }, /^PORT must be a whole number from 0 to 65535, got "abc"$/],
    [{ PORT: '70000' }, /^PORT/],
    [{ INVENTORY_ENV: 'prod' }, /^INVENTORY_ENV must be one of production, staging/],
    [{ LOG_LEVEL: 'loud' }, /^LOG_LEVEL must be one of/],
    [{ BODY_LIMIT: '12 parsecs' }, /^BODY_LIMIT must be a size/],
    [{ BODY_LIMIT: '0' }, /^BODY_LIMIT/],
    [{ PUBLIC_BASE_URL: 'https://x.example/v2' }, /^PUBLIC_BASE_URL must be an absolute http\(s\) URL ending in \/v1/],
    [{ STAGING_BASE_URL: 'not a url' }, /^STAGING_BASE_URL/],
    [{ DATABASE_URL: 'mysql://user:secret@db/x' }, /^DATABASE_URL must be sqlite:PATH/],
    [{ REQUEST_TIMEOUT_MS: '-5' }, /^REQUEST_TIMEOUT_MS/],
    [{ AUTH_FAILURES_PER_MINUTE: '0' }, /^AUTH_FAILURES_PER_MINUTE/],
    [{ IDEMPOTENCY_RECORDS_PER_KEY: '0' }, /^IDEMPOTENCY_RECORDS_PER_KEY must be a whole number from 1 to 10000000, got "0"$/],
    [{ IDEMPOTENCY_RECORDS_PER_KEY: 'many' }, /^IDEMPOTENCY_RECORDS_PER_KEY/],
    [{ HISTORY_RETENTION_DAYS: '-1' }, /^HISTORY_RETENTION_DAYS must be a whole number from 0 to 36500/],
    [{ HISTORY_RETENTION_DAYS: '1.5' }, /^HISTORY_RETENTION_DAYS/],
  ];
  for (const [env, message] of cases) {
    assert.throws(() => loadConfig(env), (err: unknown) => err instanceof ConfigError && message.test(err.message), JSON.stringify(env));
  }
});

test('STORE_TIMEOUT_MS: the longest a request waits on the store, 5 s by default, from 100 ms to 5 minutes', () => {
  assert.equal(loadConfig({}).storeTimeoutMs, 5000);
  assert.equal(loadConfig({ STORE_TIMEOUT_MS: '2000' }).storeTimeoutMs, 2000);
  for (const raw of ['99', '300001', '5s', '-1']) {
    assert.throws(
      () => loadConfig({ STORE_TIMEOUT_MS: raw }),
      (err: unknown) => err instanceof ConfigError && /^STORE_TIMEOUT_MS must be a whole number from 100 to 300000/.test(err.message),
      raw,
    );
  }
});

test('a DATABASE_URL error never echoes a password', () => {
  assert.throws(() => loadConfig({ DATABASE_URL: 'mysql://user:secret@db/x' }), (err: Error) => !err.message.includes('secret'));
});

test('DATABASE_URL forms', () => {
  assert.deepEqual(parseDatabaseUrl('sqlite:./data/x.db'), { backend: 'sqlite', filename: resolve('data/x.db') });
  assert.deepEqual(parseDatabaseUrl('sqlite:/tmp/x.db'), { backend: 'sqlite', filename: '/tmp/x.db' });
  assert.deepEqual(parseDatabaseUrl('sqlite:///tmp/x.db'), { backend: 'sqlite', filename: '/tmp/x.db' });
  assert.deepEqual(parseDatabaseUrl('sqlite::memory:'), { backend: 'sqlite', filename: ':memory:' });
  assert.equal(parseDatabaseUrl('postgres://u@h/db').backend, 'postgres');
  assert.equal(parseDatabaseUrl('postgresql://u@h/db').backend, 'postgres');
});

test('connections: MAX_CONNECTIONS, KEEP_ALIVE_TIMEOUT_MS, SHUTDOWN_DRAIN_MS and SHUTDOWN_MIN_DRAIN_MS, with their defaults and bounds', () => {
  const defaults = loadConfig({});
  assert.equal(defaults.maxConnections, 10_000);
  assert.equal(defaults.keepAliveTimeoutMs, 72_000);
  assert.equal(defaults.shutdownDrainMs, 5_000);
  assert.equal(defaults.shutdownMinDrainMs, 0);
  const set = loadConfig({ MAX_CONNECTIONS: '50', KEEP_ALIVE_TIMEOUT_MS: '1500', SHUTDOWN_DRAIN_MS: '0', SHUTDOWN_MIN_DRAIN_MS: '2000' });
  assert.deepEqual([set.maxConnections, set.keepAliveTimeoutMs, set.shutdownDrainMs, set.shutdownMinDrainMs], [50, 1500, 0, 2000]);
  const cases: [Record<string, string>, RegExp][] = [
    [{ MAX_CONNECTIONS: '0' }, /^MAX_CONNECTIONS must be a whole number from 1 to/],
    [{ MAX_CONNECTIONS: 'many' }, /^MAX_CONNECTIONS/],
    [{ KEEP_ALIVE_TIMEOUT_MS: '0' }, /^KEEP_ALIVE_TIMEOUT_MS/],
    [{ SHUTDOWN_DRAIN_MS: '-1' }, /^SHUTDOWN_DRAIN_MS/],
    [{ SHUTDOWN_MIN_DRAIN_MS: '-1' }, /^SHUTDOWN_MIN_DRAIN_MS/],
  ];
  for (const [env, message] of cases) {
    assert.throws(() => loadConfig(env), (err: unknown) => err instanceof ConfigError && message.test(err.message), JSON.stringify(env));
  }
});

test('METRICS_PORT is off unless set; METRICS_HOST defaults to loopback', () => {
  const off = loadConfig({});
  assert.equal(off.metricsPort, undefined);
  assert.equal(off.metricsHost, '127.0.0.1');
  const on = loadConfig({ METRICS_PORT: '9464', METRICS_HOST: '0.0.0.0' });
  assert.equal(on.metricsPort, 9464);
  assert.equal(on.metricsHost, '0.0.0.0');
  assert.equal(loadConfig({ METRICS_PORT: '0' }).metricsPort, 0);
  for (const bad of ['x', '70000', '-1']) {
    assert.throws(() => loadConfig({ METRICS_PORT: bad }), (err: unknown) => err instanceof ConfigError && /^METRICS_PORT must be a whole number/.test(err.message), bad);
  }
});

test('CORS_ORIGINS: a list of exact origins, off by default; anything else is refused naming the variable', () => {
  assert.deepEqual(loadConfig({}).corsOrigins, []);
  assert.deepEqual(loadConfig({ CORS_ORIGINS: 'https://shop.example, http://localhost:3000' }).corsOrigins, ['https://shop.example', 'http://localhost:3000']);
  for (const bad of ['*', 'https://shop.example/', 'https://shop.example/app', 'shop.example', 'ftp://shop.example', 'https://shop.example,', 'HTTPS://Shop.example']) {
    assert.throws(() => loadConfig({ CORS_ORIGINS: bad }), (err: unknown) => err instanceof ConfigError && /^CORS_ORIGINS must be/.test(err.message), bad);
  }
});

test('limits: rate limit per key, Redis for shared counts, event-loop delay', () => {
  const defaults = loadConfig({});
  assert.equal(defaults.rateLimitPerMinute, 6000);
  assert.equal(defaults.redisUrl, undefined);
  assert.equal(defaults.redisKeyPrefix, 'petstore-inventory:');
  assert.equal(defaults.maxEventLoopDelayMs, 1000);
  const set = loadConfig({ RATE_LIMIT_PER_MINUTE: '0', REDIS_URL: 'redis://:pw@127.0.0.1:6379/2', REDIS_KEY_PREFIX: 'inv-staging:', MAX_EVENT_LOOP_DELAY_MS: '0' });
  assert.equal(set.rateLimitPerMinute, 0, '0 turns the limit off');
  assert.equal(set.redisUrl, 'redis://:pw@127.0.0.1:6379/2');
  assert.equal(set.redisKeyPrefix, 'inv-staging:');
  assert.equal(set.maxEventLoopDelayMs, 0, '0 turns shedding off');
  const cases: [Record<string, string>, RegExp][] = [
    [{ RATE_LIMIT_PER_MINUTE: '-1' }, /^RATE_LIMIT_PER_MINUTE must be a whole number from 0/],
    [{ RATE_LIMIT_PER_MINUTE: 'lots' }, /^RATE_LIMIT_PER_MINUTE/],
    [{ REDIS_URL: 'http://127.0.0.1:6379' }, /^REDIS_URL must be redis:\/\//],
    [{ REDIS_URL: 'not a url' }, /^REDIS_URL/],
    [{ REDIS_KEY_PREFIX: 'a b' }, /^REDIS_KEY_PREFIX/],
    [{ MAX_EVENT_LOOP_DELAY_MS: '1.5' }, /^MAX_EVENT_LOOP_DELAY_MS must be a whole number from 0 to 60000/],
  ];
  for (const [env, message] of cases) {
    assert.throws(() => loadConfig(env), (err: unknown) => err instanceof ConfigError && message.test(err.message), JSON.stringify(env));
  }
  assert.throws(() => loadConfig({ REDIS_URL: 'http://:secret@host' }), (err: Error) => !err.message.includes('secret'), 'a REDIS_URL error never echoes a password');
});

test('storage limits: 10,000 idempotency records per API key and all history by default; both settable', () => {
  const defaults = loadConfig({});
  assert.equal(defaults.idempotencyRecordsPerKey, 10_000);
  assert.equal(defaults.historyRetentionDays, 0);
  const set = loadConfig({ IDEMPOTENCY_RECORDS_PER_KEY: '50', HISTORY_RETENTION_DAYS: '90' });
  assert.equal(set.idempotencyRecordsPerKey, 50);
  assert.equal(set.historyRetentionDays, 90);
});

test('events on NATS: off unless EVENTS_NATS_URL is set; the stream keeps 7 days by default', () => {
  const defaults = loadConfig({});
  assert.equal(defaults.eventsNatsUrl, undefined);
  assert.equal(defaults.eventsNatsMaxAgeDays, 7);
  const set = loadConfig({ EVENTS_NATS_URL: 'nats://u:pw@10.0.0.1:4222, tls://10.0.0.2:4222', EVENTS_NATS_MAX_AGE_DAYS: '0' });
  assert.equal(set.eventsNatsUrl, 'nats://u:pw@10.0.0.1:4222, tls://10.0.0.2:4222');
  assert.equal(set.eventsNatsMaxAgeDays, 0, '0 keeps everything');
  const cases: [Record<string, string>, RegExp][] = [
    [{ EVENTS_NATS_URL: 'http://127.0.0.1:4222' }, /^EVENTS_NATS_URL must be nats:\/\//],
    [{ EVENTS_NATS_URL: 'nats://127.0.0.1:4222,' }, /^EVENTS_NATS_URL/],
    [{ EVENTS_NATS_MAX_AGE_DAYS: '-1' }, /^EVENTS_NATS_MAX_AGE_DAYS must be a whole number from 0/],
  ];
  for (const [env, message] of cases) {
    assert.throws(() => loadConfig(env), (err: unknown) => err instanceof ConfigError && message.test(err.message), JSON.stringify(env));
  }
  assert.throws(() => loadConfig({ EVENTS_NATS_URL: 'http://:secret@host' }), (err: Error) => !err.message.includes('secret'), 'an EVENTS_NATS_URL error never echoes a password');
});

test('DATABASE_DIRECT_URL: unset by default; a postgres:// URL without options=, never echoing its password when refused', () => {
  assert.equal(loadConfig({}).databaseDirectUrl, undefined);
  const direct = 'postgres://inventory:secret@db.internal:5432/inventory';
  assert.equal(loadConfig({ DATABASE_DIRECT_URL: direct }).databaseDirectUrl, direct);
  const cases: [Record<string, string>, RegExp][] = [
    [{ DATABASE_DIRECT_URL: 'mysql://inventory:secret@db.internal/inventory' }, /^DATABASE_DIRECT_URL must be postgres:\/\//],
    [{ DATABASE_DIRECT_URL: `${direct}?options=-c%20search_path%3Dx` }, /^DATABASE_DIRECT_URL must not set options=/],
  ];
  for (const [env, message] of cases) {
    assert.throws(
      () => loadConfig(env),
      (err: unknown) => err instanceof ConfigError && message.test(err.message) && !err.message.includes('secret'),
      JSON.stringify(env),
    );
  }
});
