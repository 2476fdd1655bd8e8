import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { test } from 'node:test';
import { Connection } from '../../../src/store/sqlite/connection.js';
import { MIGRATIONS as SQLITE_MIGRATIONS } from '../../../src/store/sqlite/migrations.js';
import { openStore as openSqliteStore } from '../../../src/store/sqlite/open.js';
import { tempDir } from '../../support/process.js';
import { adjustment, change, stockEvents } from '../../support/store.js';

test('a store of schema version 2 is migrated with its history chained per pet and its list readers told to reload', async (t) => {
  const filename = join(tempDir(t), 'v2.db');
  const old = new Connection(filename);
  old.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL) STRICT');
  for (const m of SQLITE_MIGRATIONS.filter((m) => m.version <= 2)) {
    old.exec(m.sql);
    old.prepare('INSERT INTO schema_migrations VALUES (?, ?, ?)').run(m.version, m.name, new Date().toISOString());
  }
  const at = '2026-01-01T00:00:00.000Z';
  old.exec(`INSERT INTO inventory (pet_id, quantity, status, created_at, updated_at, version, change_seq)
            VALUES (1, 3, 'available', '${at}', '${at}', 4, 4), (2, 20, 'sold', '${at}', '${at}', 3, 3), (3, 5, 'pending', '${at}', '${at}', 1, 1)`);
  // Pets 1 and 2 changed in turn: 1: 0 -> 1 -> 2 -> 3; 2: 0 -> 10 -> 20.
  const rows = [[1, 0, 1], [2, 0, 10], [1, 1, 2], [2, 10, 20], [1, 2, 3]];
  for (const [pet, previous, quantity] of rows) {
    old.prepare(`INSERT INTO inventory_history (pet_id, previous_quantity, quantity, at, key_id, key_name, request_id, reason) VALUES (?, ?, ?, ?, 'k', 'k', 'r', NULL)`).run(pet, previous, quantity, at);
  }
  old.exec('UPDATE store_state SET version = 4');
  old.close();

  const store = openSqliteStore(filename);
  t.after(() => store.close());
  const quantities = async (pet: bigint, before?: bigint) => (await store.history.listHistory(pet, { limit: 10, ...(before === undefined ? {} : { before }) }))!.map((r) => r.quantity);
  assert.deepEqual(await quantities(1n), [3, 2, 1]);
  assert.deepEqual(await quantities(2n), [20, 10]);
  assert.deepEqual(await quantities(3n), []);
  const page = (await store.history.listHistory(1n, { limit: 1 }))!;
  assert.deepEqual(await quantities(1n, page[0]!.id), [2, 1]);

  // A reader that cached the list at an older version reads it all again; one at the current version reads nothing.
  assert.equal((await store.entries.changesSince(2)).items.length, 3);
  assert.deepEqual(await store.entries.changesSince(4), { version: 4, items: [], removed: [], complete: false, eventsHead: 0 });

  // New changes chain onto the migrated rows and are logged for readers.
  await store.changes.applyChange(change(1n, 4));
  assert.deepEqual(await quantities(1n), [4, 3, 2, 1]);
  assert.deepEqual((await store.entries.changesSince(4)).items, [{ petId: 1n, quantity: 4, status: 'available' }]);
});

test('a store of schema version 3 is migrated with its idempotency records hashed, counted and still replayed', async (t) => {
  const filename = join(tempDir(t), 'v3.db');
  const old = new Connection(filename);
  old.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL) STRICT');
  for (const m of SQLITE_MIGRATIONS.filter((m) => m.version <= 3)) {
    old.exec(m.sql);
    old.prepare('INSERT INTO schema_migrations VALUES (?, ?, ?)').run(m.version, m.name, new Date().toISOString());
  }
  const now = Date.now();
  const iso = (ms: number) => new Date(ms).toISOString();
  old.exec(`INSERT INTO inventory (pet_id, quantity, status, created_at, updated_at, version) VALUES (1, 5, 'available', '${iso(now)}', '${iso(now)}', 2)`);
  const outcome = JSON.stringify({ kind: 'updated', entry: { petId: '1', quantity: 5, status: 'available', version: 2 } });
  const insert = old.prepare('INSERT INTO idempotency_records (api_key_id, idem_key, fingerprint, outcome, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)');
  // Answered an hour before the upgrade; another key of the same API key, and an expired one of another.
  insert.run('key_a', 'sale-1', 'fp-1', outcome, iso(now - 3_600_000), iso(now + 23 * 3_600_000));
  insert.run('key_a', 'sale-2', 'fp-2', outcome, iso(now - 3_600_000), iso(now + 23 * 3_600_000));
  insert.run('key_b', 'sale-1', 'fp-1', outcome, iso(now - 48 * 3_600_000), iso(now - 24 * 3_600_000));
  old.close();

  const store = openSqliteStore(filename);
  t.after(() => store.close());
  const retry = await store.changes.applyChange(change(1n, 5, { keyId: 'key_a', idempotency: { key: 'sale-1', fingerprint: 'fp-1', expiresAt: new Date(now + 86_400_000), recordsPerKey: 2 } }));
  assert.deepEqual(retry, { kind: 'updated', entry: { item: { petId: 1n, quantity: 5, status: 'available' }, version: 2 }, replayed: true });
  // The migrated count holds the cap: key_a already has its two records.
  const refused = await store.changes.applyChange(change(1n, 6, { keyId: 'key_a', idempotency: { key: 'sale-3', fingerprint: 'fp-3', expiresAt: new Date(now + 86_400_000), recordsPerKey: 2 } }));
  assert.equal(refused.kind, 'idempotency_records_full');
  await store.close();

  const check = new Connection(filename, { readonly: true });
  try {
    const rows = check.prepare('SELECT api_key_id, key_hash FROM idempotency_records ORDER BY api_key_id, key_hash').raw(true).all();
    const sha = (k: string) => createHash('sha256').update(k).digest('hex');
    assert.deepEqual(rows, [['key_a', sha('sale-1')], ['key_a', sha('sale-2')], ['key_b', sha('sale-1')]].sort((x, y) => (x.join() < y.join() ? -1 : 1)));
    assert.deepEqual(check.prepare('SELECT api_key_id, records FROM idempotency_counts ORDER BY api_key_id').raw(true).all(), [['key_a', 2], ['key_b', 1]]);
  } finally {
    check.close();
  }
});

test('a store of schema version 4 is migrated with every entry still stocked, and can retire one', async (t) => {
  const filename = join(tempDir(t), 'v4.db');
  const old = new Connection(filename);
  old.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL) STRICT');
  for (const m of SQLITE_MIGRATIONS.filter((m) => m.version <= 4)) {
    for (const [name, fn] of Object.entries(m.functions ?? {})) old.function(name, { deterministic: true }, fn);
    old.exec(m.sql);
    old.prepare('INSERT INTO schema_migrations VALUES (?, ?, ?)').run(m.version, m.name, new Date().toISOString());
  }
  const at = '2026-01-01T00:00:00.000Z';
  old.exec(`INSERT INTO inventory (pet_id, quantity, status, created_at, updated_at) VALUES (1, 0, 'sold', '${at}', '${at}'), (2, 4, 'available', '${at}', '${at}')`);
  old.close();

  const store = openSqliteStore(filename);
  t.after(() => store.close());
  assert.deepEqual((await store.entries.listInventory()).map((i) => i.petId), [1n, 2n]);
  assert.equal((await store.changes.retireEntry(1n, { force: false, at: new Date() })).kind, 'retired');
  assert.deepEqual(await store.entries.listInventory(), [{ petId: 2n, quantity: 4, status: 'available' }]);
});

test('a store of schema version 5 is migrated with an empty event log at head 0, which its next change starts', async (t) => {
  const filename = join(tempDir(t), 'v5.db');
  const old = new Connection(filename);
  old.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL) STRICT');
  for (const m of SQLITE_MIGRATIONS.filter((m) => m.version <= 5)) {
    for (const [name, fn] of Object.entries(m.functions ?? {})) old.function(name, { deterministic: true }, fn);
    old.exec(m.sql);
    old.prepare('INSERT INTO schema_migrations VALUES (?, ?, ?)').run(m.version, m.name, new Date().toISOString());
  }
  const at = '2026-01-01T00:00:00.000Z';
  old.exec(`INSERT INTO inventory (pet_id, quantity, status, created_at, updated_at, version) VALUES (1, 3, 'available', '${at}', '${at}', 4)`);
  old.exec("UPDATE store_state SET version = 7; INSERT INTO inventory_changes (seq, pet_ids) VALUES (7, '[1]')");
  old.close();

  const store = openSqliteStore(filename);
  t.after(() => store.close());
  assert.deepEqual(await store.events.readEvents(0, 10), { items: [], head: 0, pruned: false });
  assert.deepEqual(await store.entries.changesSince(7), { version: 7, items: [], removed: [], complete: false, eventsHead: 0 });
  await store.changes.applyChange(change(1n, 5));
  const items = stockEvents((await store.events.readEvents(0, 10)).items);
  assert.deepEqual(items.map((e) => [e.seq, e.type, e.previousQuantity, e.quantity, e.version]), [[1, 'inventory.updated', 3, 5, 5]]);
  assert.equal((await store.entries.changesSince(7)).eventsHead, 1);
});

test('a store of schema version 6 is migrated with no webhook endpoint; one added starts at its event log head', async (t) => {
  const filename = join(tempDir(t), 'v6.db');
  const old = new Connection(filename);
  old.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL) STRICT');
  for (const m of SQLITE_MIGRATIONS.filter((m) => m.version <= 6)) {
    for (const [name, fn] of Object.entries(m.functions ?? {})) old.function(name, { deterministic: true }, fn);
    old.exec(m.sql);
    old.prepare('INSERT INTO schema_migrations VALUES (?, ?, ?)').run(m.version, m.name, new Date().toISOString());
  }
  old.exec('UPDATE store_state SET events_head = 42');
  old.close();

  const store = openSqliteStore(filename);
  t.after(() => store.close());
  assert.deepEqual(await store.webhookEndpoints.listEndpoints(), []);
  const added = await store.webhookEndpoints.addEndpoint({ id: 'whk_1', url: 'https://example.com/hook', description: null, secret: 'whsec_x', createdAt: new Date() });
  assert.equal(added.deliveredSeq, 42);
});

test('a store of schema version 7 is migrated with its history rows as they were, and takes the reasons sold and damaged', async (t) => {
  const filename = join(tempDir(t), 'v7.db');
  const old = new Connection(filename);
  old.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL) STRICT');
  for (const m of SQLITE_MIGRATIONS.filter((m) => m.version <= 7)) {
    for (const [name, fn] of Object.entries(m.functions ?? {})) old.function(name, { deterministic: true }, fn);
    old.exec(m.sql);
    old.prepare('INSERT INTO schema_migrations VALUES (?, ?, ?)').run(m.version, m.name, new Date().toISOString());
  }
  const at = '2026-11-01T10:00:00.000Z';
  old.exec(`
    INSERT INTO inventory (pet_id, quantity, status, created_at, updated_at, version, last_history_id) VALUES (1, 5, 'available', '${at}', '${at}', 3, 8);
    INSERT INTO inventory_history VALUES (7, 1, 2, 4, '${at}', 'key_a', 'till', 'r-1', 'received', NULL), (8, 1, 4, 5, '${at}', 'key_a', 'till', 'r-2', NULL, 7);
  `);
  old.close();

  const store = openSqliteStore(filename);
  t.after(() => store.close());
  await store.changes.applyChange(adjustment(1n, -1, { reason: 'sold' }));
  await store.changes.applyChange(change(1n, 2, { reason: 'damaged' }));
  const rows = (await store.history.listHistory(1n, { limit: 10 }))!;
  assert.deepEqual(rows.map((r) => [r.previousQuantity, r.quantity, r.reason]), [[4, 2, 'damaged'], [5, 4, 'sold'], [4, 5, null], [2, 4, 'received']]);
  assert.deepEqual(rows.slice(2).map((r) => r.id), [8n, 7n], 'the old rows keep their ids');
});

test('a store of schema version 9 is migrated with its webhook endpoints at one request in flight; a new one gets 16', async (t) => {
  const filename = join(tempDir(t), 'v9.db');
  const old = new Connection(filename);
  old.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL) STRICT');
  for (const m of SQLITE_MIGRATIONS.filter((m) => m.version <= 9)) {
    for (const [name, fn] of Object.entries(m.functions ?? {})) old.function(name, fn);
    old.exec(m.sql);
    old.prepare('INSERT INTO schema_migrations VALUES (?, ?, ?)').run(m.version, m.name, new Date().toISOString());
  }
  old.exec(`INSERT INTO webhook_endpoints (id, url, description, secret, enabled, created_at, delivered_seq, failures)
            VALUES ('whk_old', 'https://old.example.com/hook', NULL, 'whsec_old', 1, '2026-01-01T00:00:00.000Z', 0, 0)`);
  old.close();

  const store = openSqliteStore(filename);
  t.after(() => store.close());
  const stands = (await store.webhookEndpoints.getEndpoint('whk_old'))!;
  assert.deepEqual([stands.maxInFlight, stands.deliveredAbove, stands.retrying], [1, [], []]);
  const added = await store.webhookEndpoints.addEndpoint({ id: 'whk_new', url: 'https://new.example.com/hook', description: null, secret: 'whsec_new', createdAt: new Date() });
  assert.equal(added.maxInFlight, 16);
});
