import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import pg from 'pg';
import { MIGRATION_LOCK_KEY } from '../../../src/store/postgres/connection.js';
import { MIGRATIONS as POSTGRES_MIGRATIONS } from '../../../src/store/postgres/migrations.js';
import { adminQuery, backendSkip, createTestDatabase, TEST_DATABASE_URL } from '../../support/backends.js';
import { adjustment, change, stockEvents } from '../../support/store.js';

/** The schema as release `version` left it (its migrations applied and recorded), then `sql` run in it (its rows). */
async function schemaAtVersion(schema: string, version: number, sql: string): Promise<void> {
  await adminQuery(`
    CREATE SCHEMA ${schema};
    SET search_path = ${schema};
    CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL);
    ${POSTGRES_MIGRATIONS.filter((m) => m.version <= version)
      .map((m) => `${m.sql}; INSERT INTO schema_migrations VALUES (${m.version}, '${m.name}', now());`)
      .join('\n')}
    ${sql}
  `);
}

describe('PostgreSQL migrations', { skip: await backendSkip('postgres') }, () => {
  it('a schema of version 3 is migrated with its idempotency records hashed, counted and still replayed', async (t) => {
    const db = await createTestDatabase('postgres', t);
    const schema = pg.escapeIdentifier(db.location);
    const now = Date.now();
    const iso = (ms: number) => new Date(ms).toISOString();
    const outcome = JSON.stringify({ kind: 'updated', entry: { petId: '1', quantity: 5, status: 'available', version: 2 } });
    // The schema as the previous release left it, with records answered an hour before the upgrade.
    await schemaAtVersion(schema, 3, `
      INSERT INTO inventory (pet_id, quantity, status, created_at, updated_at, version) VALUES (1, 5, 'available', now(), now(), 2);
      INSERT INTO idempotency_records (api_key_id, idem_key, fingerprint, outcome, created_at, expires_at) VALUES
        ('key_a', 'sale-1', 'fp-1', '${outcome}', '${iso(now - 3_600_000)}', '${iso(now + 23 * 3_600_000)}'),
        ('key_a', 'sale-2', 'fp-2', '${outcome}', '${iso(now - 3_600_000)}', '${iso(now + 23 * 3_600_000)}'),
        ('key_b', 'sale-1', 'fp-1', '${outcome}', '${iso(now - 48 * 3_600_000)}', '${iso(now - 24 * 3_600_000)}');
    `);

    const store = await db.open();
    const idempotency = (key: string, fingerprint: string) => ({ key, fingerprint, expiresAt: new Date(now + 86_400_000), recordsPerKey: 2 });
    const retry = await store.changes.applyChange(change(1n, 5, { keyId: 'key_a', idempotency: idempotency('sale-1', 'fp-1') }));
    assert.deepEqual(retry, { kind: 'updated', entry: { item: { petId: 1n, quantity: 5, status: 'available' }, version: 2 }, replayed: true });
    assert.equal((await store.changes.applyChange(change(1n, 6, { keyId: 'key_a', idempotency: idempotency('sale-3', 'fp-3') }))).kind, 'idempotency_records_full');
    assert.deepEqual(await db.migrationVersions(), POSTGRES_MIGRATIONS.map((m) => m.version));

    const sha = (k: string) => createHash('sha256').update(k).digest('hex');
    const rows = await adminQuery<{ api_key_id: string; key_hash: string }>(`SELECT api_key_id, key_hash FROM ${schema}.idempotency_records ORDER BY 1, 2`);
    assert.deepEqual(
      rows.map((r) => [r.api_key_id, r.key_hash]),
      [['key_a', sha('sale-1')], ['key_a', sha('sale-2')], ['key_b', sha('sale-1')]].sort((x, y) => (x.join() < y.join() ? -1 : 1)),
    );
    const counts = await adminQuery<{ api_key_id: string; records: number }>(`SELECT api_key_id, records FROM ${schema}.idempotency_counts ORDER BY 1`);
    assert.deepEqual(counts.map((r) => [r.api_key_id, r.records]), [['key_a', 2], ['key_b', 1]]);
  });

  it('a schema of version 4 is migrated with every entry still stocked, and can retire one', async (t) => {
    const db = await createTestDatabase('postgres', t);
    const schema = pg.escapeIdentifier(db.location);
    await schemaAtVersion(schema, 4, `
      INSERT INTO inventory (pet_id, quantity, status, created_at, updated_at) VALUES (1, 0, 'sold', now(), now()), (2, 4, 'available', now(), now());
    `);

    const store = await db.open();
    assert.deepEqual((await store.entries.listInventory()).map((i) => i.petId), [1n, 2n]);
    assert.equal((await store.changes.retireEntry(1n, { force: false, at: new Date() })).kind, 'retired');
    assert.deepEqual(await store.entries.listInventory(), [{ petId: 2n, quantity: 4, status: 'available' }]);
    assert.deepEqual(await db.migrationVersions(), POSTGRES_MIGRATIONS.map((m) => m.version));
  });

  it('a schema of version 6 is migrated with an empty event log at head 0, which its next change starts', async (t) => {
    const db = await createTestDatabase('postgres', t);
    const schema = pg.escapeIdentifier(db.location);
    await schemaAtVersion(schema, 6, `
      INSERT INTO inventory (pet_id, quantity, status, created_at, updated_at, version, change_seq) VALUES (1, 3, 'available', now(), now(), 4, 7);
      UPDATE store_state SET version = 7;
    `);

    const store = await db.open();
    assert.deepEqual(await store.events.readEvents(0, 10), { items: [], head: 0, pruned: false });
    assert.deepEqual(await store.entries.changesSince(7), { version: 7, items: [], removed: [], complete: false, eventsHead: 0 });
    await store.changes.applyChange(change(1n, 5));
    const items = stockEvents((await store.events.readEvents(0, 10)).items);
    assert.deepEqual(items.map((e) => [e.seq, e.type, e.previousQuantity, e.quantity, e.version]), [[1, 'inventory.updated', 3, 5, 5]]);
    assert.equal((await store.entries.changesSince(7)).eventsHead, 1);
    assert.deepEqual(await db.migrationVersions(), POSTGRES_MIGRATIONS.map((m) => m.version));
  });

  it('a schema of version 7 is migrated with no webhook endpoint; one added starts at its event log head', async (t) => {
    const db = await createTestDatabase('postgres', t);
    const schema = pg.escapeIdentifier(db.location);
    await schemaAtVersion(schema, 7, `
      UPDATE store_state SET events_head = 42;
    `);

    const store = await db.open();
    assert.deepEqual(await store.webhookEndpoints.listEndpoints(), []);
    const added = await store.webhookEndpoints.addEndpoint({ id: 'whk_1', url: 'https://example.com/hook', description: null, secret: 'whsec_x', createdAt: new Date() });
    assert.equal(added.deliveredSeq, 42);
    assert.deepEqual(await db.migrationVersions(), POSTGRES_MIGRATIONS.map((m) => m.version));
  });

  it('a schema of version 8 is migrated with its history rows as they were, and takes the reasons sold and damaged', async (t) => {
    const db = await createTestDatabase('postgres', t);
    const schema = pg.escapeIdentifier(db.location);
    await schemaAtVersion(schema, 8, `
      INSERT INTO inventory (pet_id, quantity, status, created_at, updated_at, version) VALUES (1, 5, 'available', now(), now(), 3);
      INSERT INTO inventory_history (pet_id, previous_quantity, quantity, at, key_id, key_name, request_id, reason) VALUES
        (1, 2, 4, now(), 'key_a', 'till', 'r-1', 'received'), (1, 4, 5, now(), 'key_a', 'till', 'r-2', NULL);
    `);

    const store = await db.open();
    await store.changes.applyChange(adjustment(1n, -1, { reason: 'sold' }));
    await store.changes.applyChange(change(1n, 2, { reason: 'damaged' }));
    const rows = (await store.history.listHistory(1n, { limit: 10 }))!;
    assert.deepEqual(rows.map((r) => [r.previousQuantity, r.quantity, r.reason]), [[4, 2, 'damaged'], [5, 4, 'sold'], [4, 5, null], [2, 4, 'received']]);
    await assert.rejects(adminQuery(`INSERT INTO ${schema}.inventory_history (pet_id, previous_quantity, quantity, at, key_id, key_name, request_id, reason)
      VALUES (1, 2, 3, now(), 'k', 'k', 'r', 'lost')`), /inventory_history_reason_check/, 'any other reason is still refused');
    assert.deepEqual(await db.migrationVersions(), POSTGRES_MIGRATIONS.map((m) => m.version));
  });

  it('a schema of version 10 is migrated with its webhook endpoints at one request in flight; a new one gets 16', async (t) => {
    const db = await createTestDatabase('postgres', t);
    const schema = pg.escapeIdentifier(db.location);
    await schemaAtVersion(schema, 10, `
      INSERT INTO webhook_endpoints (id, url, description, secret, enabled, created_at, delivered_seq, failures)
        VALUES ('whk_old', 'https://old.example.com/hook', null, 'whsec_old', true, now(), 0, 0);
    `);

    const store = await db.open();
    const old = (await store.webhookEndpoints.getEndpoint('whk_old'))!;
    assert.deepEqual([old.maxInFlight, old.deliveredAbove, old.retrying], [1, [], []]);
    const added = await store.webhookEndpoints.addEndpoint({ id: 'whk_new', url: 'https://new.example.com/hook', description: null, secret: 'whsec_new', createdAt: new Date() });
    assert.equal(added.maxInFlight, 16);
    assert.deepEqual(await db.migrationVersions(), POSTGRES_MIGRATIONS.map((m) => m.version));
  });

  it('an instance opened with a statement timeout far shorter waits for another instance migrating, then opens and serves', async (t) => {
    const db = await createTestDatabase('postgres', t);
    // Another instance mid-migration: it holds the schema's migration lock until its transaction ends.
    const other = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await other.connect();
    t.after(() => other.end());
    await other.query('BEGIN');
    await other.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [MIGRATION_LOCK_KEY, db.location]);
    const statementTimeoutMs = 200;
    const heldMs = 5 * statementTimeoutMs;
    const started = performance.now();
    const opening = db.open({ statementTimeoutMs });
    let released: number | undefined;
    setTimeout(() => {
      released = performance.now() - started;
      void other.query('COMMIT');
    }, heldMs);
    // Before, the wait for the lock was a statement under the store's timeout, cancelled after 200 ms.
    const store = await opening;
    assert.ok(released !== undefined, `opened after ${Math.round(performance.now() - started)} ms, while the other instance still held the lock`);
    await store.changes.addItems([{ petId: 1n, quantity: 2, status: 'available' }]);
    assert.deepEqual(await store.entries.listInventory(), [{ petId: 1n, quantity: 2, status: 'available' }]);
    assert.deepEqual(await db.migrationVersions(), POSTGRES_MIGRATIONS.map((m) => m.version));
  });
});
