import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { test } from 'node:test';
import { ConfigError, loadConfig } from '../src/config.js';
import { parseDatabaseUrl } from '../src/store/open.js';

test('defaults: port 8080, SQLite under ./data, production, 16 KiB bodies', () => {
  const c = loadConfig({});
  assert.equal(c.port, 8080);
  assert.equal(c.host, '0.0.0.0');
  assert.equal(c.databaseUrl, 'sqlite:./data/inventory.db');
  assert.equal(c.environment, 'production');
  assert.equal(c.bodyLimit, 16384);
  assert.equal(c.logLevel, 'info');
  assert.equal(c.publicBaseUrl, 'http://localhost:8080/v1');
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
  assert.equal(c.stagingBaseUrl, 'http://localhost:9100/v1');
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
  ];
  for (const [env, message] of cases) {
    assert.throws(() => loadConfig(env), (err: unknown) => err instanceof ConfigError && message.test(err.message), JSON.stringify(env));
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
