import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import pg from 'pg';
import type { ChangeResult, QuantityChange } from '../../src/domain/inventory.js';
import type { InventoryItem } from '../../src/schemas/inventory.js';
import { PRUNE_BATCH } from '../../src/store/pruning.js';
import { Connection } from '../../src/store/sqlite/connection.js';
import type { Store } from '../../src/store/store.js';
import { BACKENDS, adminQuery, backendSkip, createTestDatabase, type TestDatabase } from '../support/backends.js';
import { change, itemOf } from '../support/store.js';

/**
 * What one API key can make the store keep (decisions 7.2): idempotency records only as the key's
 * SHA-256, at most recordsPerKey live ones per API key (exact across stores on one database), and
 * history pruned by age without breaking an entry's history or its pages.
 */

const DAY_MS = 86_400_000;
const T0 = Date.parse('2020-01-01T00:00:00.000Z');

function item(petId: bigint, quantity = 0): InventoryItem {
  return { petId, quantity, status: 'available' };
}

function keyed(key: string, recordsPerKey: number, options: { expiresAt?: Date; fingerprint?: string } = {}): Pick<QuantityChange, 'idempotency'> {
  return { idempotency: { key, fingerprint: options.fingerprint ?? 'fp', expiresAt: options.expiresAt ?? new Date(Date.now() + DAY_MS), recordsPerKey } };
}

function kinds(results: readonly ChangeResult[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const r of results) counts[r.kind] = (counts[r.kind] ?? 0) + 1;
  return counts;
}

/** Every idempotency record and the per-key counts, read beside the store. */
async function rawRecords(db: TestDatabase): Promise<{ records: Record<string, unknown>[]; counts: Record<string, number> }> {
  const countsOf = (rows: { api_key_id: string; records: number }[]) => Object.fromEntries(rows.map((r) => [r.api_key_id, Number(r.records)]));
  if (db.backend === 'sqlite') {
    const conn = new Connection(db.location, { readonly: true });
    try {
      return {
        records: conn.prepare('SELECT * FROM idempotency_records ORDER BY api_key_id, key_hash').all() as Record<string, unknown>[],
        counts: countsOf(conn.prepare('SELECT * FROM idempotency_counts').all() as { api_key_id: string; records: number }[]),
      };
    } finally {
      conn.close();
    }
  }
  const schema = pg.escapeIdentifier(db.location);
  return {
    records: await adminQuery(`SELECT * FROM ${schema}.idempotency_records ORDER BY api_key_id, key_hash`),
    counts: countsOf(await adminQuery(`SELECT * FROM ${schema}.idempotency_counts`)),
  };
}

async function historyQuantities(store: Store, petId: bigint, before?: bigint): Promise<number[]> {
  return (await store.history.listHistory(petId, { limit: 100, ...(before === undefined ? {} : { before }) }))!.map((r) => r.quantity);
}

for (const backend of BACKENDS) {
  describe(`storage one key can cause, on ${backend}`, { skip: await backendSkip(backend) }, () => {
    it('keeps an Idempotency-Key only as its SHA-256, and replays by it', async (t) => {
      const db = await createTestDatabase(backend, t);
      const store = await db.open();
      await store.changes.addItems([item(1n)]);
      const key = `order-${'x'.repeat(240)}-"quoted"`;
      assert.equal((await store.changes.applyChange(change(1n, 5, keyed(key, 10)))).kind, 'updated');
      assert.equal((await store.changes.applyChange(change(1n, 5, keyed(key, 10)))).kind, 'updated');
      const { records, counts } = await rawRecords(db);
      assert.equal(records.length, 1);
      assert.equal(records[0]!.key_hash, createHash('sha256').update(key).digest('hex'));
      assert.ok(!JSON.stringify(records).includes('order-'), 'the key itself is stored nowhere in the record');
      assert.deepEqual(counts, { key_test: 1 });
    });

    it('a new key past recordsPerKey live records is refused until the oldest expires; replays, refusals and other API keys go on', async (t) => {
      const db = await createTestDatabase(backend, t);
      const store = await db.open();
      await store.changes.addItems([item(1n), item(2n)]);
      const now = Date.now();
      const expiry = (days: number) => new Date(now + days * DAY_MS);
      for (const [i, days] of [[1, 2], [2, 1], [3, 3]] as const) {
        assert.equal((await store.changes.applyChange(change(1n, i, keyed(`k${i}`, 3, { expiresAt: expiry(days) })))).kind, 'updated');
      }
      const refused = await store.changes.applyChange(change(2n, 9, keyed('k4', 3)));
      assert.deepEqual(refused, { kind: 'idempotency_records_full', retryAt: expiry(1) }, 'retry when the oldest live record (k2) expires');
      assert.deepEqual(await itemOf(store, 2n), item(2n), 'a refused change writes nothing');
      assert.deepEqual(await historyQuantities(store, 2n), []);

      const replay = await store.changes.applyChange(change(1n, 1, keyed('k1', 3, { expiresAt: expiry(2) })));
      assert.equal(replay.kind === 'updated' && replay.replayed, true, 'a replay needs no new record');
      assert.deepEqual(await store.changes.applyChange(change(1n, 7, keyed('k1', 3, { fingerprint: 'other' }))), { kind: 'idempotency_key_reused' });
      assert.equal((await store.changes.applyChange(change(2n, 9))).kind, 'updated', 'a change without a key is not limited');
      assert.equal((await store.changes.applyChange(change(2n, 8, { keyId: 'key_other', ...keyed('k4', 3) }))).kind, 'updated', 'another API key has its own records');
      assert.deepEqual((await rawRecords(db)).counts, { key_test: 3, key_other: 1 });
    });

    it('at the cap, expired records make room (the oldest first), and an expired key is reused in place', async (t) => {
      const db = await createTestDatabase(backend, t);
      const store = await db.open();
      await store.changes.addItems([item(1n)]);
      const past = (ms: number) => ({ expiresAt: new Date(Date.now() - ms) });
      await store.changes.applyChange(change(1n, 1, keyed('old-1', 3, past(2000))));
      await store.changes.applyChange(change(1n, 2, keyed('old-2', 3, past(1000))));
      await store.changes.applyChange(change(1n, 3, keyed('live', 3)));
      // Full (3 rows), but two are expired: an expired key runs again in its own row.
      assert.equal((await store.changes.applyChange(change(1n, 4, keyed('old-2', 3, { fingerprint: 'new' })))).kind, 'updated');
      // A new key takes the oldest expired row's place; the next finds only live records.
      assert.equal((await store.changes.applyChange(change(1n, 5, keyed('new-1', 3)))).kind, 'updated');
      assert.equal((await store.changes.applyChange(change(1n, 6, keyed('new-2', 3)))).kind, 'idempotency_records_full');
      assert.deepEqual((await rawRecords(db)).counts, { key_test: 3 });
      assert.equal((await itemOf(store, 1n))?.quantity, 5);
    });

    it('the purge deletes expired records in batches and frees their places', async (t) => {
      const db = await createTestDatabase(backend, t);
      const store = await db.open();
      const pets = Array.from({ length: 300 }, (_, i) => BigInt(i + 1));
      await store.changes.addItems(pets.map((p) => item(p)));
      const cap = PRUNE_BATCH + 500;
      // Expired records past one purge batch, for two API keys, and one live record.
      const expired = { expiresAt: new Date(Date.now() - 1000) };
      for (let round = 0; round < 4; round++) {
        await Promise.all(pets.map((p) => store.changes.applyChange(change(p, round, keyed(`e-${round}-${p}`, cap, expired)))));
      }
      await Promise.all(pets.slice(0, 50).map((p) => store.changes.applyChange(change(p, 9, { keyId: 'key_other', ...keyed(`o-${p}`, cap, expired) }))));
      await store.changes.applyChange(change(1n, 1, keyed('live', cap)));
      assert.deepEqual((await rawRecords(db)).counts, { key_test: 1201, key_other: 50 });

      assert.equal(await store.maintenance.purgeIdempotencyRecords(new Date()), 1250);
      assert.deepEqual((await rawRecords(db)).counts, { key_test: 1, key_other: 0 });
      const replay = await store.changes.applyChange(change(1n, 1, keyed('live', cap)));
      assert.equal(replay.kind === 'updated' && replay.replayed, true, 'the live record is kept');
    });

    it('the cap holds exactly when changes with new keys race, from two stores on one database', async (t) => {
      const db = await createTestDatabase(backend, t);
      const [a, b] = [await db.open(), await db.open()];
      const pets = Array.from({ length: 40 }, (_, i) => BigInt(i + 1));
      await a.changes.addItems(pets.map((p) => item(p)));
      const cap = 15;
      // Grouped into shared batches in each store, the two stores' batches racing for the same API key.
      const results = await Promise.all(pets.map((p, i) => (i % 2 ? a : b).changes.applyChange(change(p, 1, keyed(`race-${p}`, cap)))));
      assert.deepEqual(kinds(results), { updated: cap, idempotency_records_full: pets.length - cap });
      assert.deepEqual((await rawRecords(db)).counts, { key_test: cap });
      const applied = await Promise.all(pets.map((p) => itemOf(a, p)));
      assert.equal(applied.filter((i) => i?.quantity === 1).length, cap, 'only the accepted changes were applied');
    });

    it('history retention: rows older than the cutoff go, in batches, each entry keeping its newest row', async (t) => {
      const db = await createTestDatabase(backend, t);
      const store = await db.open();
      const pets = Array.from({ length: 500 }, (_, i) => BigInt(i + 1));
      await store.changes.addItems([...pets.map((p) => item(p)), item(1000n), item(1001n)]);
      const old = (minute: number) => ({ at: new Date(T0 + minute * 60_000) });
      // 2,500 old rows (past two purge batches), five per pet.
      for (let round = 1; round <= 5; round++) await Promise.all(pets.map((p) => store.changes.applyChange(change(p, round, old(round)))));
      // Pet 1000: old rows, then new ones; pet 1001: old rows only.
      for (const q of [1, 2, 3]) await store.changes.applyChange(change(1000n, q, old(10 + q)));
      for (const q of [1, 2, 3]) await store.changes.applyChange(change(1001n, q, old(20 + q)));
      const cursorOf1001 = (await store.history.listHistory(1001n, { limit: 2 }))!.at(-1)!.id;
      for (const q of [4, 5]) await store.changes.applyChange(change(1000n, q));

      const cutoff = new Date(T0 + DAY_MS);
      assert.equal(await store.maintenance.purgeHistory(cutoff), 4 * 500 + 3 + 2);
      assert.deepEqual(await historyQuantities(store, 1n), [5], 'an entry whose rows are all old keeps its newest');
      assert.deepEqual(await historyQuantities(store, 1000n), [5, 4], 'the old rows before newer ones go');
      assert.deepEqual(await historyQuantities(store, 1001n), [3]);
      assert.deepEqual(await historyQuantities(store, 1001n, cursorOf1001), [], 'a cursor whose row was pruned has nothing older');
      assert.equal(await store.maintenance.purgeHistory(cutoff), 0, 'nothing more to prune');

      // New changes chain onto what was kept, with new ids, and page as before.
      await store.changes.applyChange(change(1001n, 4));
      await store.changes.applyChange(change(1n, 6));
      assert.deepEqual(await historyQuantities(store, 1001n), [4, 3]);
      assert.deepEqual(await historyQuantities(store, 1n), [6, 5]);
      const [newest] = (await store.history.listHistory(1001n, { limit: 1 }))!;
      assert.deepEqual(await historyQuantities(store, 1001n, newest!.id), [3]);
      assert.deepEqual(await historyQuantities(store, 2n), [5], 'other entries untouched by the new ids');
    });

    it('history retention stops at the first row that is not old: nothing younger is deleted, even out of order', async (t) => {
      const db = await createTestDatabase(backend, t);
      const store = await db.open();
      await store.changes.addItems([item(1n), item(2n)]);
      const at = (day: number) => ({ at: new Date(T0 + day * DAY_MS) });
      await store.changes.applyChange(change(1n, 1, at(0)));
      await store.changes.applyChange(change(1n, 2, at(10)));
      // Committed after a young row, yet old (a clock behind): left for a later run, as the rest of the prefix.
      await store.changes.applyChange(change(1n, 3, at(1)));
      await store.changes.applyChange(change(2n, 1, at(0)));
      await store.changes.applyChange(change(2n, 2, at(11)));
      assert.equal(await store.maintenance.purgeHistory(new Date(T0 + 5 * DAY_MS)), 1);
      assert.deepEqual(await historyQuantities(store, 1n), [3, 2]);
      assert.deepEqual(await historyQuantities(store, 2n), [2, 1]);
    });
  });
}
