import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { APPLICATION_NAME, beginStatement, poolConfig, queryOnPool, openPool } from '../../../src/store/postgres/connection.js';
import { clock } from '../../../src/store/deadline.js';
import { backendSkip, TEST_DATABASE_URL } from '../../support/backends.js';

/** What a transaction-mode PgBouncer passes on at startup; anything else ends the connection ("unsupported startup parameter"). */
const POOLER_STARTUP_PARAMETERS = new Set(['client_encoding', 'datestyle', 'timezone', 'standard_conforming_strings', 'application_name']);
/** What pg sends at startup from its config (pg 8's ConnectionParameters), beside user and database. */
const PG_STARTUP_OPTIONS = ['options', 'statement_timeout', 'lock_timeout', 'idle_in_transaction_session_timeout', 'replication', 'client_encoding', 'application_name', 'fallback_application_name'];

const postgresSkip = await backendSkip('postgres');

describe('PostgreSQL connection settings', () => {
  it("refuses a URL with options=: they would reach the server at startup, which a pooler refuses", () => {
    assert.throws(() => poolConfig('postgres://u@h/db?options=-c%20search_path%3Dx', {}), /^Error: DATABASE_URL must not set options=/);
  });

  it('asks at startup for nothing a transaction-mode pooler refuses', () => {
    const config = poolConfig('postgres://u@h/db', { schema: 'a_schema', timeoutMs: 2000, statementTimeoutMs: 700 });
    const sent = PG_STARTUP_OPTIONS.filter((name) => (config as Record<string, unknown>)[name] !== undefined);
    assert.deepEqual(sent, ['application_name']);
    assert.ok(sent.every((name) => POOLER_STARTUP_PARAMETERS.has(name)));
    assert.equal(config.application_name, APPLICATION_NAME);
    // The client-side read timeout stays: statement_timeout and its grace.
    assert.equal(config.query_timeout, 1700);
  });

  it('begins every transaction with its settings, as SET LOCAL in one string', () => {
    assert.equal(
      beginStatement({ statementTimeoutMs: 700, idleInTransactionTimeoutMs: 4000, schema: 'a_schema' }),
      'BEGIN; SET LOCAL statement_timeout = 700; SET LOCAL idle_in_transaction_session_timeout = 4000; SET LOCAL synchronous_commit = on; SET LOCAL search_path = "a_schema"',
    );
    assert.doesNotMatch(beginStatement({ statementTimeoutMs: 700, idleInTransactionTimeoutMs: 4000 }), /search_path/);
    assert.throws(() => beginStatement({ statementTimeoutMs: 1.5, idleInTransactionTimeoutMs: 4000 }), /whole number/);
    assert.throws(() => beginStatement({ statementTimeoutMs: 1, idleInTransactionTimeoutMs: 1, schema: 'x; DROP' }), /schema must match/);
  });

  it('one statement on the pool runs under the statement timeout it set for itself, and the pool stays usable', { skip: postgresSkip }, async (t) => {
    const pool = openPool(TEST_DATABASE_URL, { statementTimeoutMs: 200 });
    t.after(() => pool.end());
    await assert.rejects(queryOnPool(pool, { name: 'sleep', text: 'SELECT pg_sleep(5)' }, clock() + 10_000), { code: '57014' });
    const { rows } = await queryOnPool<{ timeout: string; sync: string }>(
      pool,
      { name: 'settings', text: "SELECT current_setting('statement_timeout') AS timeout, current_setting('synchronous_commit') AS sync" },
      clock() + 10_000,
    );
    assert.deepEqual(rows, [{ timeout: '200ms', sync: 'on' }]);
  });

  it('one statement without values is one message: the settings, the statement and COMMIT', { skip: postgresSkip }, async (t) => {
    const pool = openPool(TEST_DATABASE_URL, { statementTimeoutMs: 200 });
    t.after(() => pool.end());
    const sent = countQueries(pool);
    const { rows } = await queryOnPool<{ timeout: string }>(pool, { name: 'settings', text: "SELECT current_setting('statement_timeout') AS timeout" }, clock() + 10_000);
    assert.deepEqual(rows, [{ timeout: '200ms' }]);
    assert.equal(sent(), 1);
  });

  it('a statement that fails rolls its transaction back, and its connection serves the next one', { skip: postgresSkip }, async (t) => {
    const pool = openPool(TEST_DATABASE_URL, {});
    t.after(() => pool.end());
    await assert.rejects(queryOnPool(pool, { name: 'fails', text: 'SELECT 1 / 0' }, clock() + 10_000), { code: '22012' });
    // Left in its aborted transaction, the connection would refuse the next BEGIN's settings.
    const { rows } = await queryOnPool<{ one: number }>(pool, { name: 'after', text: 'SELECT 1 AS one' }, clock() + 10_000);
    assert.deepEqual(rows, [{ one: 1 }]);
    assert.equal(pool.totalCount, 1);
  });

  it('one statement with values is one message too, bound, under the settings, and a failure rolls back', { skip: postgresSkip }, async (t) => {
    const pool = openPool(TEST_DATABASE_URL, { statementTimeoutMs: 200 });
    t.after(() => pool.end());
    const sent = countQueries(pool);
    const { rows } = await queryOnPool<{ timeout: string; sync: string; echo: string[] }>(
      pool,
      { name: 'settings', text: "SELECT current_setting('statement_timeout') AS timeout, current_setting('synchronous_commit') AS sync, $1::text[] AS echo", values: [["it's", 'a "b"\\', '']] },
      clock() + 10_000,
    );
    assert.deepEqual(rows, [{ timeout: '200ms', sync: 'on', echo: ["it's", 'a "b"\\', ''] }]);
    assert.equal(sent(), 1);
    await assert.rejects(queryOnPool(pool, { name: 'sleep', text: 'SELECT pg_sleep($1)', values: [5] }, clock() + 10_000), { code: '57014' });
    await assert.rejects(queryOnPool(pool, { name: 'fails', text: 'SELECT 1 / $1', values: [0] }, clock() + 10_000), { code: '22012' });
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    // A value the driver cannot send fails before anything is written: the connection stays usable.
    await assert.rejects(queryOnPool(pool, { name: 'unsendable', text: 'SELECT $1::json', values: [circular] }, clock() + 10_000), TypeError);
    const after = await queryOnPool<{ n: number }>(pool, { name: 'after', text: 'SELECT $1::int + 1 AS n', values: [1] }, clock() + 10_000);
    assert.deepEqual(after.rows, [{ n: 2 }]);
  });
});

/** How many times the pool's connections were handed a query since this was called. */
function countQueries(pool: ReturnType<typeof openPool>): () => number {
  let count = 0;
  const counted = new WeakSet<object>();
  pool.on('acquire', (client) => {
    if (counted.has(client)) return;
    counted.add(client);
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args) => {
      count++;
      return query(...args);
    };
  });
  return () => count;
}
