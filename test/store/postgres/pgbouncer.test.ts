import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { issueApiKey } from '../../../src/auth/issue-key.js';
import { StoreUnavailableError } from '../../../src/errors.js';
import { RELISTEN_DELAY_MS } from '../../../src/store/postgres/events.js';
import type { Store } from '../../../src/store/store.js';
import { backendSkip, createTestDatabase, TEST_DATABASE_DIRECT_URL, type TestDatabase } from '../../support/backends.js';
import { pgbouncerSkip, startPgBouncer } from '../../support/pgbouncer.js';
import { changeBatch, eventsAfter, importPlan, importSource, setQuantity } from '../../support/store.js';

/**
 * The PostgreSQL store behind PgBouncer in transaction mode, as managed offerings run it: it
 * refuses startup parameters beyond a few, and gives each transaction whichever server connection
 * is free, so named statements, SETs and temporary tables do not carry from one to the next.
 */

/** Every statement config with a name that reaches the driver while the test runs: none may, as each would be prepared on one server connection only. */
function namedStatements(t: TestContext): string[] {
  const named: string[] = [];
  const query = Reflect.get(pg.Client.prototype, 'query') as (...a: unknown[]) => unknown;
  t.mock.method(pg.Client.prototype, 'query', function (this: pg.Client, ...args: unknown[]) {
    const [config] = args;
    if (typeof config === 'object' && config !== null && typeof (config as { name?: unknown }).name === 'string') named.push((config as { name: string }).name);
    return query.apply(this, args);
  });
  return named;
}

async function throughPgBouncer(t: TestContext, db: TestDatabase, options: { directUrl?: string } = {}): Promise<Store> {
  return db.open({ url: await startPgBouncer(t), ...options });
}

/** A deadline on waiting, not a measure of speed. */
const LIVENESS_MS = 10_000;

const item = (petId: bigint, quantity = 1) => ({ petId, quantity, status: 'available' as const });

describe('PostgreSQL store through PgBouncer in transaction mode', { skip: (await backendSkip('postgres')) || pgbouncerSkip() }, () => {
  it('opens (migrating through it), writes, imports, keeps keys and reads the log, no named statement reaching the driver', async (t) => {
    const named = namedStatements(t);
    const db = await createTestDatabase('postgres', t);
    const store = await throughPgBouncer(t, db);
    await store.changes.addItems([item(1n), item(2n)]);
    assert.deepEqual(await setQuantity(store, 1n, 5), { ...item(1n, 5) });
    const batch = await store.changes.applyBatch(changeBatch([{ petId: 1n, delta: 2 }, { petId: 2n, quantity: 9 }]));
    assert.equal(batch.kind, 'applied', JSON.stringify(batch, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v)));
    const imported = await store.changes.importItems(importSource([item(10n, 3), item(11n, 4), item(12n, 5)], { batch: 2 }), importPlan());
    assert.deepEqual(imported, { applied: true, created: 3, updated: 0, unchanged: 0 });
    // A refused import rolls back to its savepoint and lists the conflict, in the same transaction as its staging table.
    const refused = await store.changes.importItems(importSource([item(13n), item(10n)]), importPlan());
    assert.equal(refused.applied, false);
    assert.equal(refused.applied === false && refused.conflictRows, 1);
    const { key, record } = await issueApiKey(store.keys, { name: 'through the pooler', environment: 'production', scopes: ['inventory:read'], expiresAt: null });
    assert.ok(key);
    assert.equal((await store.keys.findApiKeyByHash(record.keyHash))?.id, record.id);
    const events = await eventsAfter(store, 0);
    assert.deepEqual(
      events.map((e) => [e.type, e.petId, e.quantity]),
      [
        ['inventory.created', 1n, 1],
        ['inventory.created', 2n, 1],
        ['inventory.updated', 1n, 5],
        ['inventory.updated', 1n, 7],
        ['inventory.updated', 2n, 9],
        ['inventory.created', 10n, 3],
        ['inventory.created', 11n, 4],
        ['inventory.created', 12n, 5],
      ],
    );
    assert.deepEqual(await store.maintenance.durability(), [{ connection: 'pool', settings: { synchronous_commit: 'on' } }]);
    assert.deepEqual(named, [], 'statements reached the driver with a name');
  });

  it("a statement running past the store's statement timeout is cancelled by the server (SET LOCAL is in force)", async (t) => {
    const db = await createTestDatabase('postgres', t);
    const url = await startPgBouncer(t);
    const locker = new pg.Client({ connectionString: url });
    locker.on('error', () => {});
    await locker.connect();
    t.after(() => locker.end());
    const store = await db.open({ url, statementTimeoutMs: 300 });
    await store.changes.addItems([item(1n)]);
    // Held in a transaction, so PgBouncer keeps this client on its server connection until the ROLLBACK.
    await locker.query(`BEGIN; LOCK TABLE ${pg.escapeIdentifier(db.location)}.inventory IN ACCESS EXCLUSIVE MODE`);
    // Released whatever the assertions find: the database's own cleanup runs first and would wait on the lock for ever.
    try {
      const error = await store.entries.listInventory().then(
        () => assert.fail('listed behind an exclusive lock'),
        (err: unknown) => err,
      );
      assert.ok(error instanceof StoreUnavailableError, `unavailable, not ${(error as Error).name}`);
      assert.equal(((error).cause as { code?: string }).code, '57014', 'cancelled by the server, before the client-side read timeout');
    } finally {
      await locker.query('ROLLBACK');
    }
    assert.deepEqual(await store.entries.listInventory(), [item(1n)]);
  });

  it("with a direct URL, a store hears another store's change through its LISTEN there at once, not only by polling", async (t) => {
    const db = await createTestDatabase('postgres', t);
    const url = await startPgBouncer(t);
    const [a, b] = [await db.open({ url, directUrl: TEST_DATABASE_DIRECT_URL }), await db.open({ url })];
    await b.changes.addItems([item(1n)]);
    let woken = 0;
    t.after(a.events.onAppended(() => woken++));
    // The LISTEN is in place once a notification sent after it arrives: keep changing until one does.
    const deadline = Date.now() + LIVENESS_MS;
    for (let quantity = 2; woken === 0; quantity++) {
      assert.ok(Date.now() < deadline, `no notification within ${LIVENESS_MS} ms`);
      await setQuantity(b, 1n, quantity);
      await sleep(50);
    }
  });

  it('without a direct URL, a store sends no LISTEN through it (one would hear nothing, and leave the LISTEN on a server connection other clients then use)', async (t) => {
    const listens: string[] = [];
    const refusals: string[] = [];
    const query = Reflect.get(pg.Client.prototype, 'query') as (...a: unknown[]) => unknown;
    t.mock.method(pg.Client.prototype, 'query', function (this: pg.Client, ...args: unknown[]) {
      if (typeof args[0] === 'string' && args[0].startsWith('LISTEN')) listens.push(args[0]);
      return query.apply(this, args);
    });
    const connect = Reflect.get(pg.Client.prototype, 'connect') as (this: pg.Client, ...a: unknown[]) => Promise<unknown>;
    t.mock.method(pg.Client.prototype, 'connect', function (this: pg.Client, ...args: unknown[]) {
      // The pool connects with a callback; the listening connection, alone outside it, with a promise.
      if (args.length > 0) return connect.apply(this, args);
      return connect.call(this).catch((err: Error) => {
        refusals.push(err.message);
        throw err;
      });
    });
    const db = await createTestDatabase('postgres', t);
    const store = await throughPgBouncer(t, db);
    t.after(store.events.onAppended(() => undefined));
    const deadline = Date.now() + LIVENESS_MS;
    // Only refusals by this test's PgBouncer count: an earlier test's store may still be reconnecting to its own, stopped one.
    const refused = () => refusals.filter((message) => message.includes('unsupported startup parameter'));
    while (refused().length === 0 && listens.length === 0) {
      assert.ok(Date.now() < deadline, `the listening connection neither refused nor listening within ${LIVENESS_MS} ms`);
      await sleep(20);
    }
    assert.deepEqual(listens, []);
    // Past the delay after which a lost listening connection is opened again: it is not, behind a pooler.
    await sleep(RELISTEN_DELAY_MS + 500);
    assert.equal(refused().length, 1, 'one attempt only');
    assert.deepEqual(listens, []);
  });
});
