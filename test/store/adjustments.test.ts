import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ChangeResult, QuantityChange } from '../../src/domain/inventory.js';
import type { InventoryItem } from '../../src/schemas/inventory.js';
import { QUANTITY_MAX } from '../../src/schemas/values.js';
import { openStore as openSqliteStore } from '../../src/store/sqlite/open.js';
import type { Store } from '../../src/store/store.js';
import { BACKENDS, backendSkip, createTestDatabase, openTestStore } from '../support/backends.js';
import { adjustment, eventsAfter, itemOf, writtenState } from '../support/store.js';

/**
 * Adjustments (decisions 5.11): a change that moves a count by a delta from the count the store
 * holds, inside its transaction, through Changes.applyChange on every backend.
 */

const DAY_MS = 86_400_000;

function item(petId: bigint, quantity: number): InventoryItem {
  return { petId, quantity, status: 'available' };
}

function updated(result: ChangeResult): { quantity: number; version: number; replayed: boolean } {
  assert.equal(result.kind, 'updated', JSON.stringify(result, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)));
  if (result.kind !== 'updated') throw new Error('unreachable');
  return { quantity: result.entry.item.quantity, version: result.entry.version, replayed: result.replayed };
}

/** `clients` loops at once, each applying its deltas to the pet one after another; every result, in each loop's order. */
async function concurrently(stores: readonly Store[], petId: bigint, deltasOf: (client: number) => number[], clients: number): Promise<ChangeResult[]> {
  const loops = Array.from({ length: clients }, async (_, client) => {
    const results: ChangeResult[] = [];
    const store = stores[client % stores.length]!;
    for (const delta of deltasOf(client)) results.push(await store.changes.applyChange(adjustment(petId, delta, { requestId: `c${client}` })));
    return results;
  });
  return (await Promise.all(loops)).flat();
}

for (const backend of BACKENDS) {
  describe(`Adjustments on ${backend}`, { skip: await backendSkip(backend) }, () => {
    it('a delta moves the count the store holds, each a new version', async (t) => {
      const store = await openTestStore(backend, t);
      await store.changes.addItems([item(1n, 10), item(2n, 3)]);
      assert.deepEqual(updated(await store.changes.applyChange(adjustment(1n, -1))), { quantity: 9, version: 2, replayed: false });
      assert.deepEqual(updated(await store.changes.applyChange(adjustment(1n, 5))), { quantity: 14, version: 3, replayed: false });
      assert.deepEqual(updated(await store.changes.applyChange(adjustment(1n, -14))), { quantity: 0, version: 4, replayed: false }, 'down to 0 exactly');
      assert.deepEqual(updated(await store.changes.applyChange(adjustment(2n, QUANTITY_MAX - 3))), { quantity: QUANTITY_MAX, version: 2, replayed: false });
      assert.deepEqual(await store.entries.listInventory(), [item(1n, 0), item(2n, QUANTITY_MAX)]);
    });

    it('below 0 is insufficient_stock with the count on hand, above the maximum quantity_out_of_range; nothing is written', async (t) => {
      const store = await openTestStore(backend, t);
      await store.changes.addItems([item(1n, 3), item(2n, QUANTITY_MAX - 1)]);
      await store.changes.applyChange(adjustment(1n, -1));
      const before = await writtenState(store, [1n, 2n]);
      assert.deepEqual(await store.changes.applyChange(adjustment(1n, -3)), { kind: 'insufficient_stock', entry: { item: item(1n, 2), version: 2 }, replayed: false });
      assert.deepEqual(await store.changes.applyChange(adjustment(1n, -QUANTITY_MAX)), { kind: 'insufficient_stock', entry: { item: item(1n, 2), version: 2 }, replayed: false });
      assert.deepEqual(await store.changes.applyChange(adjustment(2n, 2)), {
        kind: 'quantity_out_of_range',
        entry: { item: item(2n, QUANTITY_MAX - 1), version: 1 },
        replayed: false,
      });
      // The sum in the store would overflow a 32-bit integer: it must be judged, not wrap or fail.
      assert.deepEqual(await store.changes.applyChange(adjustment(2n, QUANTITY_MAX)), {
        kind: 'quantity_out_of_range',
        entry: { item: item(2n, QUANTITY_MAX - 1), version: 1 },
        replayed: false,
      });
      assert.deepEqual(await writtenState(store, [1n, 2n]), before, 'no version, history row or event');
      assert.deepEqual(await store.changes.applyChange(adjustment(3n, 1)), { kind: 'not_found', replayed: false });
    });

    it('If-Match is checked before the stock: a stale ETag is precondition_failed whatever the delta', async (t) => {
      const store = await openTestStore(backend, t);
      await store.changes.addItems([item(1n, 2)]);
      const stale = { condition: { anyVersion: false, versions: [7] } } as const;
      const entry = { item: item(1n, 2), version: 1 };
      assert.deepEqual(await store.changes.applyChange(adjustment(1n, -5, stale)), { kind: 'precondition_failed', entry, replayed: false });
      assert.deepEqual(await store.changes.applyChange(adjustment(1n, QUANTITY_MAX, stale)), { kind: 'precondition_failed', entry, replayed: false });
      const current = { condition: { anyVersion: false, versions: [1] } } as const;
      assert.deepEqual(await store.changes.applyChange(adjustment(1n, -5, current)), { kind: 'insufficient_stock', entry, replayed: false });
      assert.deepEqual(updated(await store.changes.applyChange(adjustment(1n, -2, current))), { quantity: 0, version: 2, replayed: false });
    });

    it('20 clients selling 25 each of a pet holding 500 at once: every sale applies, the count ends at 0, the 501st is refused', async (t) => {
      const store = await openTestStore(backend, t);
      await store.changes.addItems([item(1n, 500)]);
      const results = await concurrently([store], 1n, () => Array<number>(25).fill(-1), 20);
      assert.equal(results.length, 500);
      assert.deepEqual(results.filter((r) => r.kind !== 'updated'), [], 'no sale refused, none lost');
      // Each sale left its own count: 499 down to 0, each once.
      assert.deepEqual(results.map((r) => updated(r).quantity).sort((a, b) => a - b), Array.from({ length: 500 }, (_, i) => i));
      assert.deepEqual(await store.entries.getEntry(1n), { item: item(1n, 0), version: 501 });
      assert.deepEqual(await store.changes.applyChange(adjustment(1n, -1)), { kind: 'insufficient_stock', entry: { item: item(1n, 0), version: 501 }, replayed: false });
      assert.equal((await store.history.listHistory(1n, { limit: 1000 }))!.length, 500);
      assert.equal((await eventsAfter(store, 1)).length, 500);
    });

    it('mixed deltas from two stores on one database at once end at the exact sum', async (t) => {
      const db = await createTestDatabase(backend, t);
      const stores = [await db.open(), await db.open()];
      await stores[0]!.changes.addItems([item(1n, 1000)]);
      // Never below 0 whatever the interleaving: at most 10 clients x 5 x 7 are taken from 1000.
      const deltasOf = (client: number) => [3, -7, client + 1, -2, 5, -(client % 4) - 1, 7, -7, 2, -5];
      const results = await concurrently(stores, 1n, deltasOf, 10);
      assert.deepEqual(results.filter((r) => r.kind !== 'updated'), []);
      const sum = Array.from({ length: 10 }, (_, c) => deltasOf(c).reduce((a, b) => a + b, 0)).reduce((a, b) => a + b, 0);
      assert.deepEqual(await itemOf(stores[1]!, 1n), item(1n, 1000 + sum));
      const rows = (await stores[0]!.history.listHistory(1n, { limit: 1000 }))!;
      assert.equal(rows.length, 100);
      // The history is a chain: each row starts where the one before it ended.
      for (let i = 1; i < rows.length; i++) assert.equal(rows[i - 1]!.previousQuantity, rows[i]!.quantity, `row ${i}`);
    });

    it('the history row and the event carry the count before and after, the reason, the key and the request', async (t) => {
      const store = await openTestStore(backend, t);
      await store.changes.addItems([item(1n, 10)]);
      const head = await store.events.head();
      const at = new Date('2026-11-26T12:00:00.000Z');
      const origin = { keyId: 'key_till', keyName: 'till 1', requestId: 'r-sale', at };
      await store.changes.applyChange(adjustment(1n, -3, { ...origin, reason: 'sold' }));
      await store.changes.applyChange(adjustment(1n, -1, { ...origin, requestId: 'r-drop', reason: 'damaged' }));
      const rows = (await store.history.listHistory(1n, { limit: 10 }))!;
      assert.deepEqual(
        rows.map(({ id: _id, ...rest }) => rest),
        [
          { petId: 1n, previousQuantity: 7, quantity: 6, at, keyId: 'key_till', keyName: 'till 1', requestId: 'r-drop', reason: 'damaged' },
          { petId: 1n, previousQuantity: 10, quantity: 7, at, keyId: 'key_till', keyName: 'till 1', requestId: 'r-sale', reason: 'sold' },
        ],
      );
      const events = await eventsAfter(store, head);
      assert.deepEqual(
        events.map(({ seq: _seq, ...rest }) => rest),
        [
          { type: 'inventory.updated', occurredAt: at, petId: 1n, status: 'available', previousQuantity: 10, quantity: 7, version: 2, reason: 'sold', source: 'api', keyId: 'key_till', requestId: 'r-sale' },
          { type: 'inventory.updated', occurredAt: at, petId: 1n, status: 'available', previousQuantity: 7, quantity: 6, version: 3, reason: 'damaged', source: 'api', keyId: 'key_till', requestId: 'r-drop' },
        ],
      );
    });

    it('an idempotent adjustment applies once and replays its outcome, a refusal too', async (t) => {
      const store = await openTestStore(backend, t);
      await store.changes.addItems([item(1n, 5)]);
      const idempotency = (key: string): Pick<QuantityChange, 'idempotency'> => ({
        idempotency: { key, fingerprint: `adjust:${key}`, expiresAt: new Date(Date.now() + DAY_MS), recordsPerKey: 100 },
      });
      const sale = adjustment(1n, -2, idempotency('sale-1'));
      const first = await store.changes.applyChange(sale);
      assert.deepEqual(updated(first), { quantity: 3, version: 2, replayed: false });
      assert.deepEqual(await store.changes.applyChange(sale), { ...first, replayed: true });
      assert.deepEqual(await store.changes.applyChange({ ...sale, at: new Date() }), { ...first, replayed: true }, 'a retry later');
      assert.equal((await itemOf(store, 1n))?.quantity, 3, 'moved once');

      const tooMany = adjustment(1n, -4, idempotency('sale-2'));
      const refused = await store.changes.applyChange(tooMany);
      assert.deepEqual(refused, { kind: 'insufficient_stock', entry: { item: item(1n, 3), version: 2 }, replayed: false });
      await store.changes.applyChange(adjustment(1n, 10));
      assert.deepEqual(await store.changes.applyChange(tooMany), { ...refused, replayed: true }, 'the refusal is kept, though the stock is there now');
      assert.deepEqual(await store.changes.applyChange(adjustment(1n, -1, { idempotency: { ...idempotency('sale-1').idempotency!, fingerprint: 'other' } })), {
        kind: 'idempotency_key_reused',
      });
      assert.equal((await itemOf(store, 1n))?.quantity, 13);
    });
  });
}

describe('Adjustments on sqlite::memory: (the writer runs on the main connection)', () => {
  it('applies deltas and refuses what would go below 0', async (t) => {
    const store = openSqliteStore(':memory:');
    t.after(() => store.close());
    await store.changes.addItems([item(1n, 3)]);
    const results = await Promise.all([-1, -1, -1, -1].map((delta) => store.changes.applyChange(adjustment(1n, delta))));
    assert.deepEqual(results.map((r) => r.kind), ['updated', 'updated', 'updated', 'insufficient_stock']);
    assert.deepEqual(await itemOf(store, 1n), item(1n, 0));
  });
});
