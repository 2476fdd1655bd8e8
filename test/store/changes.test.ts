import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { INT64_MAX } from '../../src/domain/pet-id.js';
import { StoreUnavailableError } from '../../src/errors.js';
import { WAITING_MAX } from '../../src/store/group-commit.js';
import type { InventoryItem } from '../../src/schemas/inventory.js';
import type { ChangeResult, QuantityChange } from '../../src/domain/inventory.js';
import { openStore as openSqliteStore } from '../../src/store/sqlite/open.js';
import { BACKENDS, backendSkip, openTestStore } from '../support/backends.js';
import { change, itemOf } from '../support/store.js';

const DAY_MS = 86_400_000;

function item(petId: bigint, quantity = 1): InventoryItem {
  return { petId, quantity, status: 'available' };
}

function idempotent(key: string, fingerprint = 'fp-1', expiresAt = new Date(Date.now() + DAY_MS)): Pick<QuantityChange, 'idempotency'> {
  return { idempotency: { key, fingerprint, expiresAt, recordsPerKey: 10_000 } };
}

function updated(result: ChangeResult): { quantity: number; version: number; replayed: boolean } {
  assert.equal(result.kind, 'updated', JSON.stringify(result, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)));
  if (result.kind !== 'updated') throw new Error('unreachable');
  return { quantity: result.entry.item.quantity, version: result.entry.version, replayed: result.replayed };
}

for (const backend of BACKENDS) {
  describe(`Store integrity on ${backend}`, { skip: await backendSkip(backend) }, () => {
    it('an entry starts at version 1 and every applied change increments it', async (t) => {
      const store = await openTestStore(backend, t);
      await store.changes.addItems([item(INT64_MAX, 3)]);
      assert.deepEqual(await store.entries.getEntry(INT64_MAX), { item: item(INT64_MAX, 3), version: 1 });
      assert.deepEqual(updated(await store.changes.applyChange(change(INT64_MAX, 4))), { quantity: 4, version: 2, replayed: false });
      assert.deepEqual(updated(await store.changes.applyChange(change(INT64_MAX, 4))), { quantity: 4, version: 3, replayed: false });
      assert.equal((await store.entries.getEntry(INT64_MAX))?.version, 3);
    });

    it('a condition on another version is precondition_failed with the current entry, and changes nothing', async (t) => {
      const store = await openTestStore(backend, t);
      await store.changes.addItems([item(1n, 3)]);
      const stale = await store.changes.applyChange(change(1n, 9, { condition: { anyVersion: false, versions: [7, 8] } }));
      assert.deepEqual(stale, { kind: 'precondition_failed', entry: { item: item(1n, 3), version: 1 }, replayed: false });
      assert.deepEqual(await store.history.listHistory(1n, { limit: 10 }), [], 'no history row');
      assert.deepEqual(updated(await store.changes.applyChange(change(1n, 9, { condition: { anyVersion: false, versions: [8, 1] } }))).version, 2);
      assert.deepEqual(updated(await store.changes.applyChange(change(1n, 10, { condition: { anyVersion: true } }))).version, 3);
      assert.equal((await itemOf(store, 1n))?.quantity, 10);
    });

    it('a change of a petId with no entry is not_found, whatever its condition, and writes nothing', async (t) => {
      const store = await openTestStore(backend, t);
      const before = await store.entries.readVersion();
      assert.deepEqual(await store.changes.applyChange(change(2n, 1)), { kind: 'not_found', replayed: false });
      assert.deepEqual(await store.changes.applyChange(change(2n, 1, { condition: { anyVersion: true } })), { kind: 'not_found', replayed: false });
      assert.equal(await store.entries.getEntry(2n), undefined);
      assert.equal(await store.entries.readVersion(), before);
    });

    it('history records every applied change, newest first, with who, when, why and the request id', async (t) => {
      const store = await openTestStore(backend, t);
      await store.changes.addItems([item(INT64_MAX, 5), item(2n, 0)]);
      const at = new Date('2026-03-04T05:06:07.089Z');
      await store.changes.applyChange(change(INT64_MAX, 8, { keyId: 'key_a', keyName: 'warehouse', requestId: 'r-1', reason: 'received', at }));
      await store.changes.applyChange(change(2n, 1));
      await store.changes.applyChange(change(INT64_MAX, 6, { keyId: 'key_b', keyName: 'till 2', requestId: 'r-2', reason: null }));
      const rows = await store.history.listHistory(INT64_MAX, { limit: 10 });
      assert.ok(rows);
      assert.deepEqual(
        rows.map(({ id: _id, at: _at, ...rest }) => rest),
        [
          { petId: INT64_MAX, previousQuantity: 8, quantity: 6, keyId: 'key_b', keyName: 'till 2', requestId: 'r-2', reason: null },
          { petId: INT64_MAX, previousQuantity: 5, quantity: 8, keyId: 'key_a', keyName: 'warehouse', requestId: 'r-1', reason: 'received' },
        ],
      );
      assert.equal(rows[1]!.at.toISOString(), at.toISOString());
      assert.ok(rows[0]!.id > rows[1]!.id);
      assert.equal(await store.history.listHistory(3n, { limit: 10 }), undefined, 'no entry: undefined, not an empty page');
    });

    it('history pages with limit and the id of the last row seen', async (t) => {
      const store = await openTestStore(backend, t);
      await store.changes.addItems([item(1n, 0)]);
      for (let q = 1; q <= 7; q++) await store.changes.applyChange(change(1n, q));
      const first = (await store.history.listHistory(1n, { limit: 3 }))!;
      assert.deepEqual(first.map((r) => r.quantity), [7, 6, 5]);
      const second = (await store.history.listHistory(1n, { limit: 3, before: first.at(-1)!.id }))!;
      assert.deepEqual(second.map((r) => r.quantity), [4, 3, 2]);
      const last = (await store.history.listHistory(1n, { limit: 3, before: second.at(-1)!.id }))!;
      assert.deepEqual(last.map((r) => r.quantity), [1]);
    });

    it('history pages of pets changed in turn stay apart; a cursor from another pet gives no rows', async (t) => {
      const store = await openTestStore(backend, t);
      await store.changes.addItems([item(1n, 0), item(2n, 0)]);
      // Interleaved, and some in one batch: each pet's rows must still chain to its own previous one.
      for (let q = 1; q <= 4; q++) await Promise.all([store.changes.applyChange(change(1n, q)), store.changes.applyChange(change(2n, 10 * q))]);
      const one = (await store.history.listHistory(1n, { limit: 10 }))!;
      const two = (await store.history.listHistory(2n, { limit: 10 }))!;
      assert.deepEqual(one.map((r) => [r.previousQuantity, r.quantity]), [[3, 4], [2, 3], [1, 2], [0, 1]]);
      assert.deepEqual(two.map((r) => [r.previousQuantity, r.quantity]), [[30, 40], [20, 30], [10, 20], [0, 10]]);
      assert.deepEqual(await store.history.listHistory(1n, { limit: 10, before: two[0]!.id }), []);
      assert.deepEqual(await store.history.listHistory(3n, { limit: 10 }), undefined);
    });

    it('an idempotency key replays its first outcome, refuses another request, and is scoped to the API key', async (t) => {
      const store = await openTestStore(backend, t);
      await store.changes.addItems([item(1n, 0)]);
      assert.deepEqual(updated(await store.changes.applyChange(change(1n, 5, idempotent('k1')))), { quantity: 5, version: 2, replayed: false });
      await store.changes.applyChange(change(1n, 6));
      // The retry answers what the first request answered, not the entry as it is now.
      assert.deepEqual(updated(await store.changes.applyChange(change(1n, 5, idempotent('k1')))), { quantity: 5, version: 2, replayed: true });
      assert.deepEqual(await store.changes.applyChange(change(1n, 7, idempotent('k1', 'fp-other'))), { kind: 'idempotency_key_reused' });
      assert.equal((await itemOf(store, 1n))?.quantity, 6, 'neither the replay nor the refused request changed anything');
      assert.equal((await store.history.listHistory(1n, { limit: 10 }))!.length, 2);
      // The same idempotency key under another API key is another request.
      assert.deepEqual(updated(await store.changes.applyChange(change(1n, 5, { keyId: 'key_other', ...idempotent('k1') }))).replayed, false);
    });

    it('not_found and precondition_failed outcomes are replayed too', async (t) => {
      const store = await openTestStore(backend, t);
      await store.changes.addItems([item(1n, 0)]);
      assert.deepEqual(await store.changes.applyChange(change(9n, 1, idempotent('nf'))), { kind: 'not_found', replayed: false });
      await store.changes.addItems([item(9n, 0)]);
      assert.deepEqual(await store.changes.applyChange(change(9n, 1, idempotent('nf'))), { kind: 'not_found', replayed: true });
      const condition = { anyVersion: false, versions: [5] } as const;
      assert.equal((await store.changes.applyChange(change(1n, 1, { condition, ...idempotent('pf') }))).kind, 'precondition_failed');
      assert.deepEqual(await store.changes.applyChange(change(1n, 1, { condition, ...idempotent('pf') })), {
        kind: 'precondition_failed',
        entry: { item: item(1n, 0), version: 1 },
        replayed: true,
      });
    });

    it('an expired idempotency record is a new request; purge removes expired records only', async (t) => {
      const store = await openTestStore(backend, t);
      await store.changes.addItems([item(1n, 0)]);
      const past = new Date(Date.now() - 1000);
      await store.changes.applyChange(change(1n, 1, idempotent('old', 'fp-1', past)));
      await store.changes.applyChange(change(1n, 2, idempotent('live')));
      assert.equal(updated(await store.changes.applyChange(change(1n, 3, idempotent('old', 'fp-2')))).replayed, false, 'expired: runs again');
      await store.changes.applyChange(change(1n, 4, idempotent('gone', 'fp-1', past)));
      assert.equal(await store.maintenance.purgeIdempotencyRecords(new Date()), 1);
      assert.equal(updated(await store.changes.applyChange(change(1n, 2, idempotent('live')))).replayed, true, 'a live record survives the purge');
    });

    it('concurrent requests with one idempotency key execute once', async (t) => {
      const store = await openTestStore(backend, t);
      await store.changes.addItems([item(1n, 0)]);
      const results = await Promise.all(Array.from({ length: 12 }, () => store.changes.applyChange(change(1n, 42, idempotent('same')))));
      const outcomes = results.map(updated);
      assert.equal(outcomes.filter((o) => !o.replayed).length, 1);
      assert.ok(outcomes.every((o) => o.quantity === 42 && o.version === 2));
      assert.equal((await store.history.listHistory(1n, { limit: 50 }))!.length, 1);
    });

    it('changes queued together succeed or fail each on their own, in arrival order', async (t) => {
      const store = await openTestStore(backend, t);
      await store.changes.addItems([item(1n, 0), item(2n, 0)]);
      const results = await Promise.allSettled([
        store.changes.applyChange(change(1n, 1)),
        store.changes.applyChange(change(2n, 1.5)), // refused by the database
        store.changes.applyChange(change(1n, 2)),
        store.changes.applyChange(change(2n, 3)),
      ]);
      assert.deepEqual(results.map((r) => r.status), ['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
      assert.deepEqual(await store.entries.listInventory(), [item(1n, 2), item(2n, 3)]);
      assert.deepEqual((await store.history.listHistory(1n, { limit: 10 }))!.map((r) => r.quantity), [2, 1]);
    });

    it('a burst of changes (grouped into shared commits): each pet in arrival order, every outcome its own', async (t) => {
      const store = await openTestStore(backend, t);
      await store.changes.addItems([item(1n, 0), item(2n, 0), item(3n, 0)]);
      const petOf = (i: number) => BigInt(1 + (i % 3));
      const burst = Array.from({ length: 30 }, (_, k) => store.changes.applyChange(change(petOf(k + 1), k + 1)));
      const missing = store.changes.applyChange(change(99n, 1));
      // Queued after pet 1's ten changes, so it must see their last version.
      const stale = store.changes.applyChange(change(1n, 5, { condition: { anyVersion: false, versions: [1] } }));
      const results = (await Promise.all(burst)).map(updated);
      for (const pet of [1n, 2n, 3n]) {
        const mine = results.filter((_, k) => petOf(k + 1) === pet);
        assert.deepEqual(mine.map((r) => r.version), Array.from({ length: 10 }, (_, k) => k + 2), `pet ${pet} versions in arrival order`);
        const quantities = mine.map((r) => r.quantity);
        assert.deepEqual((await store.history.listHistory(pet, { limit: 20 }))!.map((r) => r.quantity), quantities.reverse());
      }
      assert.equal((await missing).kind, 'not_found');
      const refused = await stale;
      assert.equal(refused.kind, 'precondition_failed');
      assert.equal(refused.kind === 'precondition_failed' && refused.entry.version, 11);
      assert.deepEqual(await store.entries.listInventory(), [item(1n, 30), item(2n, 28), item(3n, 29)]);
    });

    it('changes beyond the waiting limit are refused at once as unavailable (503), the rest applied', async (t) => {
      const store = await openTestStore(backend, t);
      const pets = Array.from({ length: WAITING_MAX + 2 }, (_, k) => BigInt(k + 1));
      await store.changes.addItems(pets.map((petId) => item(petId, 0)));
      // Submitted in one turn of the event loop: WAITING_MAX wait for the first batch, the next two are refused.
      const settled = await Promise.allSettled(pets.map((petId) => store.changes.applyChange(change(petId, 7))));
      assert.deepEqual(
        settled.map((r) => r.status),
        [...Array<string>(WAITING_MAX).fill('fulfilled'), 'rejected', 'rejected'],
      );
      for (const refused of settled.slice(WAITING_MAX) as PromiseRejectedResult[]) {
        assert.ok(refused.reason instanceof StoreUnavailableError, String(refused.reason));
      }
      const stock = await store.entries.listInventory();
      assert.deepEqual(stock.filter((i) => i.quantity === 7).length, WAITING_MAX);
      assert.deepEqual(stock.slice(WAITING_MAX), [item(pets.at(-2)!, 0), item(pets.at(-1)!, 0)]);
    });

    it('a bulk creation (more than 10,000 entries) is seen by changesSince as the whole list', async (t) => {
      const store = await openTestStore(backend, t);
      await store.changes.addItems([item(1n)]);
      const before = await store.entries.readVersion();
      const bulk = Array.from({ length: 10_001 }, (_, i) => item(BigInt(i + 2)));
      await store.changes.addItems(bulk);
      const { items, complete } = await store.entries.changesSince(before);
      assert.ok(items.length >= bulk.length, `${items.length} entries`);
      assert.deepEqual(items.slice(-bulk.length), bulk);
      if (complete) assert.deepEqual(items, [item(1n), ...bulk], 'a whole list is every entry');
      await store.changes.applyChange(change(5n, 9));
      assert.deepEqual((await store.entries.changesSince(await store.entries.readVersion() - 1)).items, [item(5n, 9)]);
    });

    it('the store version rises with every committed creation and change; changesSince returns just those entries', async (t) => {
      const store = await openTestStore(backend, t);
      const v0 = await store.entries.readVersion();
      await store.changes.addItems([item(1n), item(2n), item(3n)]);
      const v1 = await store.entries.readVersion();
      assert.ok(v1 > v0);
      assert.deepEqual(await store.entries.changesSince(-1), { version: v1, items: [item(1n), item(2n), item(3n)], removed: [], complete: true, eventsHead: 3 });
      assert.deepEqual(await store.entries.changesSince(v1), { version: v1, items: [], removed: [], complete: false, eventsHead: 3 });
      await store.changes.applyChange(change(2n, 7));
      await store.changes.applyChange(change(2n, 5, { condition: { anyVersion: false, versions: [99] } }));
      const v2 = await store.entries.readVersion();
      assert.ok(v2 > v1);
      assert.deepEqual(await store.entries.changesSince(v1), { version: v2, items: [item(2n, 5 + 2)], removed: [], complete: false, eventsHead: 4 });
      await store.changes.addItems([item(0n)]);
      const v3 = await store.entries.readVersion();
      assert.deepEqual(await store.entries.changesSince(v1), { version: v3, items: [item(0n), item(2n, 7)], removed: [], complete: false, eventsHead: 5 });
      await store.changes.retireEntry(1n, { force: true, at: new Date() });
      const v4 = await store.entries.readVersion();
      assert.deepEqual(await store.entries.changesSince(v3), { version: v4, items: [], removed: [1n], complete: false, eventsHead: 6 });
      assert.deepEqual(await store.entries.changesSince(-1), { version: v4, items: [item(0n), item(2n, 7), item(3n)], removed: [], complete: true, eventsHead: 6 });
    });
  });
}

describe('Store integrity on sqlite::memory: (the writer runs on the main connection)', () => {
  it('applies, judges and replays changes like the file store, and commits queued changes together', async (t) => {
    const store = openSqliteStore(':memory:');
    t.after(() => store.close());
    await store.changes.addItems([item(1n, 0), item(2n, 0)]);
    const results = await Promise.allSettled([
      store.changes.applyChange(change(1n, 1, idempotent('a'))),
      store.changes.applyChange(change(2n, 1.5)),
      store.changes.applyChange(change(1n, 2, { condition: { anyVersion: false, versions: [2] } })),
      store.changes.applyChange(change(1n, 1, idempotent('a'))),
    ]);
    assert.deepEqual(results.map((r) => r.status), ['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    const [first, , conditional, replay] = results.map((r) => (r.status === 'fulfilled' ? r.value : undefined));
    assert.deepEqual(updated(first!), { quantity: 1, version: 2, replayed: false });
    assert.deepEqual(updated(conditional!), { quantity: 2, version: 3, replayed: false });
    assert.deepEqual(updated(replay!), { quantity: 1, version: 2, replayed: true });
    assert.deepEqual(await store.entries.listInventory(), [item(1n, 2), item(2n, 0)]);
  });
});
