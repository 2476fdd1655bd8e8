import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ChangeBatch, ChangeOrigin, ChangeRefusal, EntryChange, InventoryEntry } from '../../src/domain/inventory.js';
import type { InventoryItem } from '../../src/schemas/inventory.js';
import { QUANTITY_MAX } from '../../src/schemas/values.js';
import { openStore as openSqliteStore } from '../../src/store/sqlite/open.js';
import type { Store } from '../../src/store/store.js';
import { BACKENDS, backendSkip, createTestDatabase, openTestStore } from '../support/backends.js';
import { withDeadline } from '../support/process.js';
import { adjustment, change, changeBatch, eventsAfter, itemOf, writtenState } from '../support/store.js';

/**
 * Batches (decisions 5.12): Changes.applyBatch applies every change or none, in one transaction,
 * each judged as a single change is; its idempotency key covers the whole.
 */

const DAY_MS = 86_400_000;
const LIVENESS_MS = 10_000;

function item(petId: bigint, quantity: number): InventoryItem {
  return { petId, quantity, status: 'available' };
}

function entry(petId: bigint, quantity: number, version: number): InventoryEntry {
  return { item: item(petId, quantity), version };
}

function keyed(key: string, fingerprint = `batch:${key}`, recordsPerKey = 100): Pick<ChangeOrigin, 'idempotency'> {
  return { idempotency: { key, fingerprint, expiresAt: new Date(Date.now() + DAY_MS), recordsPerKey } };
}

/**
 * Pets 1..4 at 5 (version 2: created, then one change), pet 5 retired, pet 6 never added; one
 * good change per pet 1..4, and one change that cannot apply of each kind.
 */
async function stocked(store: Store): Promise<void> {
  await store.changes.addItems([1n, 2n, 3n, 4n, 5n].map((petId) => item(petId, 4)));
  await Promise.all([1n, 2n, 3n, 4n].map((petId) => store.changes.applyChange(change(petId, 5))));
  await store.changes.retireEntry(5n, { force: true, at: new Date() });
}

const GOOD: readonly EntryChange[] = [
  { petId: 3n, quantity: 9, reason: 'received' },
  { petId: 1n, delta: -2, reason: 'sold' },
  { petId: 4n, delta: 1, reason: null, condition: { anyVersion: false, versions: [2] } },
  { petId: 2n, delta: -5, reason: 'damaged', condition: { anyVersion: true } },
];

/** A change that cannot apply, of each kind: on pet `petId` (held at 5, version 2) where it names one, and what refuses it. */
const BAD: readonly { name: string; change: (petId: bigint) => EntryChange; outcome: (petId: bigint) => ChangeRefusal }[] = [
  { name: 'retired', change: () => ({ petId: 5n, quantity: 1, reason: null }), outcome: () => ({ kind: 'not_found' }) },
  { name: 'never added', change: () => ({ petId: 6n, delta: 1, reason: null }), outcome: () => ({ kind: 'not_found' }) },
  {
    name: 'a stale If-Match',
    change: (petId) => ({ petId, delta: -1, reason: null, condition: { anyVersion: false, versions: [1] } }),
    outcome: (petId) => ({ kind: 'precondition_failed', entry: entry(petId, 5, 2) }),
  },
  { name: 'below 0', change: (petId) => ({ petId, delta: -6, reason: 'sold' }), outcome: (petId) => ({ kind: 'insufficient_stock', entry: entry(petId, 5, 2) }) },
  {
    name: 'past the maximum',
    change: (petId) => ({ petId, delta: QUANTITY_MAX, reason: null }),
    outcome: (petId) => ({ kind: 'quantity_out_of_range', entry: entry(petId, 5, 2) }),
  },
];

const ALL_PETS = [1n, 2n, 3n, 4n, 5n, 6n];

for (const backend of BACKENDS) {
  describe(`Batches on ${backend}`, { skip: await backendSkip(backend) }, () => {
    it('applies every change in one write: entries in the order given, each a new version, its history row and its event', async (t) => {
      const store = await openTestStore(backend, t);
      await stocked(store);
      const version = await store.entries.readVersion();
      const head = await store.events.head();
      const at = new Date('2026-11-26T13:00:00.000Z');
      const result = await store.changes.applyBatch(changeBatch(GOOD, { keyId: 'key_wh', keyName: 'warehouse', requestId: 'r-batch', at }));
      const after = [entry(3n, 9, 3), entry(1n, 3, 3), entry(4n, 6, 3), entry(2n, 0, 3)];
      assert.deepEqual(result, { kind: 'applied', entries: after, replayed: false });
      assert.equal(await store.entries.readVersion(), version + 1, 'one store version for the batch');
      assert.deepEqual(await store.entries.listInventory(), [item(1n, 3), item(2n, 0), item(3n, 9), item(4n, 6)]);
      const events = await eventsAfter(store, head);
      assert.deepEqual(
        events.map(({ seq: _seq, ...rest }) => rest),
        GOOD.map((c, i) => ({
          type: 'inventory.updated',
          occurredAt: at,
          petId: c.petId,
          status: 'available',
          previousQuantity: 5,
          quantity: after[i]!.item.quantity,
          version: 3,
          reason: c.reason,
          source: 'api',
          keyId: 'key_wh',
          requestId: 'r-batch',
        })),
      );
      for (const [i, c] of GOOD.entries()) {
        const rows = (await store.history.listHistory(c.petId, { limit: 1 }))!;
        assert.deepEqual(rows.map(({ id: _id, ...rest }) => rest)[0], { petId: c.petId, previousQuantity: 5, quantity: after[i]!.item.quantity, at, keyId: 'key_wh', keyName: 'warehouse', requestId: 'r-batch', reason: c.reason });
      }
    });

    it('one change that cannot apply, of each kind and at each index, refuses the batch: nothing written, no event', async (t) => {
      const store = await openTestStore(backend, t);
      await stocked(store);
      const before = await writtenState(store, ALL_PETS);
      for (const bad of BAD) {
        for (let index = 0; index < GOOD.length; index++) {
          // The bad change goes at `index` among the good changes of the other pets (first, between, last).
          const victim = GOOD[index]!.petId;
          const others = GOOD.filter((c) => c.petId !== victim);
          const batch = [...others.slice(0, index), bad.change(victim), ...others.slice(index)];
          const result = await store.changes.applyBatch(changeBatch(batch));
          assert.deepEqual(result, { kind: 'refused', index, outcome: bad.outcome(victim), replayed: false }, `${bad.name} at ${index}`);
        }
      }
      assert.deepEqual(await writtenState(store, ALL_PETS), before);
    });

    it('the refusal names the first change, in the order given, that cannot apply', async (t) => {
      const store = await openTestStore(backend, t);
      await stocked(store);
      const batch = changeBatch([
        { petId: 1n, delta: -1 },
        { petId: 2n, delta: -6 },
        { petId: 6n, quantity: 1 },
        { petId: 3n, delta: QUANTITY_MAX },
      ]);
      assert.deepEqual(await store.changes.applyBatch(batch), { kind: 'refused', index: 1, outcome: { kind: 'insufficient_stock', entry: entry(2n, 5, 2) }, replayed: false });
      assert.deepEqual(await itemOf(store, 1n), item(1n, 5), 'the change before it was not applied');
    });

    it('an idempotency key applies a batch once and replays its outcome, applied or refused; another request with it is refused', async (t) => {
      const store = await openTestStore(backend, t);
      await stocked(store);
      const batch = changeBatch([{ petId: 1n, delta: -1 }, { petId: 2n, quantity: 7 }], keyed('b-1'));
      const first = await store.changes.applyBatch(batch);
      assert.deepEqual(first, { kind: 'applied', entries: [entry(1n, 4, 3), entry(2n, 7, 3)], replayed: false });
      const head = await store.events.head();
      assert.deepEqual(await store.changes.applyBatch(batch), { ...first, replayed: true });
      assert.deepEqual(await store.changes.applyBatch({ ...batch, at: new Date(), requestId: 'r-retry' }), { ...first, replayed: true });
      assert.equal(await store.events.head(), head, 'a replay appends nothing');
      assert.deepEqual(await itemOf(store, 1n), item(1n, 4), 'applied once');

      const tooMany = changeBatch([{ petId: 3n, delta: -1 }, { petId: 4n, delta: -6 }], keyed('b-2'));
      const refused = await store.changes.applyBatch(tooMany);
      assert.deepEqual(refused, { kind: 'refused', index: 1, outcome: { kind: 'insufficient_stock', entry: entry(4n, 5, 2) }, replayed: false });
      await store.changes.applyChange(adjustment(4n, 10));
      assert.deepEqual(await store.changes.applyBatch(tooMany), { ...refused, replayed: true }, 'kept, though the stock is there now');
      assert.deepEqual(await itemOf(store, 3n), item(3n, 5));

      assert.deepEqual(await store.changes.applyBatch(changeBatch([{ petId: 3n, delta: -1 }], keyed('b-1', 'another request'))), { kind: 'idempotency_key_reused' });
      // A key used by a change is another request for a batch too (the fingerprints name the operation).
      await store.changes.applyChange(change(3n, 1, keyed('c-1', 'patch:c-1')));
      assert.deepEqual(await store.changes.applyBatch(changeBatch([{ petId: 3n, delta: -1 }], keyed('c-1'))), { kind: 'idempotency_key_reused' });
      assert.deepEqual(await itemOf(store, 3n), item(3n, 1));
    });

    it('concurrent batches with one idempotency key apply once', async (t) => {
      const store = await openTestStore(backend, t);
      await stocked(store);
      const batch = changeBatch([{ petId: 1n, delta: -1 }], keyed('same'));
      const results = await Promise.all(Array.from({ length: 5 }, () => store.changes.applyBatch(batch)));
      assert.equal(results.filter((r) => r.kind === 'applied' && !r.replayed).length, 1);
      assert.deepEqual(results.map((r) => r.kind), Array<string>(5).fill('applied'));
      assert.deepEqual(await itemOf(store, 1n), item(1n, 4));
    });

    it('a new key past the API key\'s records cap is refused and applies nothing; changes and batches share the cap', async (t) => {
      const store = await openTestStore(backend, t);
      await stocked(store);
      const cap = 2;
      await store.changes.applyChange(change(1n, 1, keyed('k-1', 'patch', cap)));
      assert.equal((await store.changes.applyBatch(changeBatch([{ petId: 2n, delta: -1 }], keyed('k-2', 'batch', cap)))).kind, 'applied');
      const before = await writtenState(store, ALL_PETS);
      const full = await store.changes.applyBatch(changeBatch([{ petId: 3n, delta: -1 }], keyed('k-3', 'batch', cap)));
      assert.equal(full.kind, 'idempotency_records_full');
      assert.deepEqual(await writtenState(store, ALL_PETS), before);
      // A key already held is replayed, not counted again.
      assert.equal((await store.changes.applyBatch(changeBatch([{ petId: 2n, delta: -1 }], keyed('k-2', 'batch', cap)))).kind, 'applied');
      // Without a key, no record and no cap.
      assert.equal((await store.changes.applyBatch(changeBatch([{ petId: 3n, delta: -1 }]))).kind, 'applied');
    });

    it('batches and single changes of the same pets at once, from two stores, never lose an update', async (t) => {
      const db = await createTestDatabase(backend, t);
      const stores = [await db.open(), await db.open()];
      const pets = [1n, 2n, 3n, 4n, 5n];
      await stores[0]!.changes.addItems(pets.map((petId) => item(petId, 1000)));
      // Reversed in half the batches: rows are locked in petId order whatever the order given, so no deadlock.
      const batches = Array.from({ length: 10 }, async (_, i) => {
        const order = i % 2 ? [...pets].reverse() : pets;
        return stores[i % 2]!.changes.applyBatch(changeBatch(order.map((petId) => ({ petId, delta: -1 }))));
      });
      const singles = pets.map(async (petId, i) => {
        const results = [];
        for (let n = 0; n < 20; n++) results.push(await stores[(i + n) % 2]!.changes.applyChange(adjustment(petId, -1)));
        return results;
      });
      const [batchResults, singleResults] = await Promise.all([Promise.all(batches), Promise.all(singles)]);
      assert.deepEqual(batchResults.map((r) => r.kind), Array<string>(10).fill('applied'));
      assert.deepEqual(singleResults.flat().filter((r) => r.kind !== 'updated'), []);
      assert.deepEqual(await stores[1]!.entries.listInventory(), pets.map((petId) => item(petId, 1000 - 10 - 20)));
      for (const petId of pets) assert.equal((await stores[0]!.history.listHistory(petId, { limit: 100 }))!.length, 30);
    });

    it('a repeated petId throws and writes nothing', async (t) => {
      const store = await openTestStore(backend, t);
      await stocked(store);
      const before = await writtenState(store, ALL_PETS);
      await assert.rejects(store.changes.applyBatch(changeBatch([{ petId: 1n, delta: -1 }, { petId: 2n, delta: 1 }, { petId: 1n, quantity: 3 }])), /changes\[2\]/);
      assert.deepEqual(await writtenState(store, ALL_PETS), before);
    });

    it('onAppended listeners are told after a batch that applied', async (t) => {
      const store = await openTestStore(backend, t);
      await stocked(store);
      const told = new Promise<void>((resolve) => {
        const stop = store.events.onAppended(() => {
          stop();
          resolve();
        });
      });
      const head = await store.events.head();
      await store.changes.applyBatch(changeBatch([{ petId: 1n, delta: -1 }, { petId: 2n, delta: -1 }]));
      await withDeadline(told, LIVENESS_MS, 'the listener was never told');
      assert.equal(await store.events.head(), head + 2);
    });
  });
}

describe('Batches on sqlite::memory: (the writer runs on the main connection)', () => {
  it('applies a batch all or nothing and replays it', async (t) => {
    const store = openSqliteStore(':memory:');
    t.after(() => store.close());
    await store.changes.addItems([item(1n, 3), item(2n, 3)]);
    const refused: ChangeBatch = changeBatch([{ petId: 1n, delta: -1 }, { petId: 2n, delta: -4 }]);
    assert.deepEqual(await store.changes.applyBatch(refused), { kind: 'refused', index: 1, outcome: { kind: 'insufficient_stock', entry: entry(2n, 3, 1) }, replayed: false });
    const batch = changeBatch([{ petId: 2n, delta: -3 }, { petId: 1n, quantity: 8 }], keyed('m'));
    const applied = await store.changes.applyBatch(batch);
    assert.deepEqual(applied, { kind: 'applied', entries: [entry(2n, 0, 2), entry(1n, 8, 2)], replayed: false });
    assert.deepEqual(await store.changes.applyBatch(batch), { ...applied, replayed: true });
    assert.deepEqual(await store.entries.listInventory(), [item(1n, 8), item(2n, 0)]);
  });
});
