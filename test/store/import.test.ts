import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ImportOutcome, ImportRow } from '../../src/domain/import.js';
import { INT64_MAX, INT64_MIN } from '../../src/domain/pet-id.js';
import type { InventoryItem, PetStatus } from '../../src/schemas/inventory.js';
import { BULK_WRITE } from '../../src/store/store.js';
import type { Store } from '../../src/store/store.js';
import { BACKENDS, backendSkip, openTestStore } from '../support/backends.js';
import { importPlan, importSource, setQuantity } from '../support/store.js';

const TWO_53 = 2n ** 53n;

function item(petId: bigint, quantity = 1, status: PetStatus = 'available'): InventoryItem {
  return { petId, quantity, status };
}

function applied(outcome: ImportOutcome): { created: number; updated: number; unchanged: number } {
  assert.ok(outcome.applied, `expected the import applied, got ${JSON.stringify(outcome, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v))}`);
  return { created: outcome.created, updated: outcome.updated, unchanged: outcome.unchanged };
}

async function unchangedBy(store: Store, fn: () => Promise<void>): Promise<void> {
  const [items, version] = [await store.entries.listInventory(), await store.entries.readVersion()];
  await fn();
  assert.deepEqual(await store.entries.listInventory(), items, 'no entry changed');
  assert.equal(await store.entries.readVersion(), version, 'the store version did not move');
}

for (const backend of BACKENDS) {
  describe(`Store.importItems on ${backend}`, { skip: await backendSkip(backend) }, () => {
    it('creates entries from batches, exact over the whole int64 range, and revives a retired one', async (t) => {
      const store = await openTestStore(backend, t);
      await store.changes.addItems([item(7n, 3, 'sold')]);
      await store.changes.retireEntry(7n, { force: true, at: new Date() });
      const before = await store.entries.readVersion();
      const rows = [item(INT64_MAX, 2147483647, 'pending'), item(INT64_MIN, 0), item(TWO_53 + 1n, 5), item(TWO_53, 6), item(7n, 1, 'available'), item(-1n)];
      const phases: string[] = [];
      const outcome = await store.changes.importItems(importSource(rows, { batch: 4 }), { ...importPlan(), onPhase: (p) => phases.push(p) });
      assert.deepEqual(applied(outcome), { created: 6, updated: 0, unchanged: 0 });
      assert.deepEqual(phases, ['checking', 'applying']);
      const sorted = [...rows].sort((a, b) => (a.petId < b.petId ? -1 : 1));
      assert.deepEqual(await store.entries.listInventory(), sorted);
      const changes = await store.entries.changesSince(before);
      assert.deepEqual([changes.items, changes.removed, changes.complete], [sorted, [], false]);
      assert.deepEqual(await store.history.listHistory(7n, { limit: 5 }), [], 'a creation writes no history');
    });

    it('is all or nothing: a petId twice, an entry that exists, or a row the reader refused imports nothing', async (t) => {
      const store = await openTestStore(backend, t);
      await store.changes.addItems([item(TWO_53 + 1n, 4, 'sold'), item(2n)]);
      const rows = Array.from({ length: 40 }, (_, i) => item(BigInt(100 + i)));
      rows.splice(25, 0, item(TWO_53 + 1n, 9, 'sold'));
      rows.splice(31, 0, item(105n, 1));
      rows.push(item(2n), item(105n, 2));

      await unchangedBy(store, async () => {
        const outcome = await store.changes.importItems(importSource(rows, { batch: 7 }), importPlan());
        assert.equal(outcome.applied, false);
        if (outcome.applied) return;
        assert.equal(outcome.conflictRows, 4);
        assert.deepEqual(outcome.conflicts, [
          { kind: 'exists', at: { line: 27 }, petId: TWO_53 + 1n },
          { kind: 'duplicate', at: { line: 33 }, petId: 105n, first: { line: 7 } },
          { kind: 'exists', at: { line: 44 }, petId: 2n },
          { kind: 'duplicate', at: { line: 45 }, petId: 105n, first: { line: 7 } },
        ]);
      });
      await unchangedBy(store, async () => {
        const outcome = await store.changes.importItems(importSource([item(50n), item(51n)], { refused: 1 }), importPlan());
        assert.deepEqual(outcome, { applied: false, conflicts: [], conflictRows: 0 });
      });
      // JSON rows name their position in the array too.
      await unchangedBy(store, async () => {
        const outcome = await store.changes.importItems(importSource([{ line: 3, index: 2, item: item(2n) }]), importPlan());
        assert.deepEqual(outcome, { applied: false, conflicts: [{ kind: 'exists', at: { line: 3, index: 2 }, petId: 2n }], conflictRows: 1 });
      });
    });

    it('finds every petId twice in a batch of hundreds, in it or against an earlier batch, by line or by position in a JSON array', async (t) => {
      const store = await openTestStore(backend, t);
      // [row, row of its first]: the last of a hundred rows, rows of one batch, of two batches, and of a batch's last few.
      const twice = [
        [10, 3],
        [99, 0],
        [150, 5],
        [270, 120],
        [320, 260],
      ] as const;
      const items = Array.from({ length: 330 }, (_, i) => item(BigInt(1000 + i)));
      for (const [row, first] of twice) items[row] = item(items[first]!.petId, 2);
      for (const json of [false, true]) {
        const rows = items.map((it, i): ImportRow => (json ? { line: 1, index: i, item: it } : { line: i + 2, item: it }));
        const at = (i: number) => (json ? { line: 1, index: i } : { line: i + 2 });
        await unchangedBy(store, async () => {
          const outcome = await store.changes.importItems(importSource(rows, { batch: 200 }), importPlan());
          assert.deepEqual(outcome, {
            applied: false,
            conflicts: twice.map(([row, first]) => ({ kind: 'duplicate', at: at(row), petId: items[first]!.petId, first: at(first) })),
            conflictRows: twice.length,
          });
        });
      }
    });

    it('a petId twice is refused whatever else it is: a retired entry to revive, or an entry to upsert', async (t) => {
      const store = await openTestStore(backend, t);
      await store.changes.addItems([item(1n, 0, 'sold'), item(2n, 4)]);
      await store.changes.retireEntry(1n, { force: false, at: new Date() });
      for (const [upsert, petId] of [[false, 1n], [true, 1n], [true, 2n]] as const) {
        await unchangedBy(store, async () => {
          const outcome = await store.changes.importItems(importSource([item(petId, 5), item(3n), item(petId, 6)]), importPlan(upsert));
          assert.deepEqual(outcome, { applied: false, conflicts: [{ kind: 'duplicate', at: { line: 4 }, petId, first: { line: 2 } }], conflictRows: 1 });
        });
      }
    });

    it('lists the first conflicts in file order, at most conflictsMax, and counts them all', async (t) => {
      const store = await openTestStore(backend, t);
      const existing = Array.from({ length: 30 }, (_, i) => item(BigInt(i)));
      await store.changes.addItems(existing);
      const rows = [...existing].reverse();
      const outcome = await store.changes.importItems(importSource(rows, { batch: 8 }), { ...importPlan(), conflictsMax: 5 });
      assert.ok(!outcome.applied);
      assert.equal(outcome.conflictRows, 30);
      assert.deepEqual(outcome.conflicts.map((c) => [c.at.line, c.petId]), [[2, 29n], [3, 28n], [4, 27n], [5, 26n], [6, 25n]]);
    });

    it('upsert: an entry takes the file quantity with a history row (correction, key "import"); the same quantity writes nothing', async (t) => {
      const store = await openTestStore(backend, t);
      await store.changes.addItems([item(1n, 5), item(2n, 3, 'pending'), item(INT64_MAX, 0, 'sold')]);
      await setQuantity(store, 1n, 6);
      const [one, two] = [await store.entries.getEntry(1n), await store.entries.getEntry(2n)];
      const at = new Date('2026-03-04T05:06:07.089Z');
      const plan = importPlan(true, at);

      const outcome = await store.changes.importItems(importSource([item(1n, 9), item(2n, 3, 'pending'), item(3n, 4, 'sold'), item(INT64_MAX, 12, 'sold')]), plan);
      assert.deepEqual(applied(outcome), { created: 1, updated: 2, unchanged: 1 });
      assert.deepEqual(await store.entries.listInventory(), [item(1n, 9), item(2n, 3, 'pending'), item(3n, 4, 'sold'), item(INT64_MAX, 12, 'sold')]);
      assert.equal((await store.entries.getEntry(1n))!.version, one!.version + 1, 'a change of quantity, as a PATCH makes it');
      assert.equal((await store.entries.getEntry(2n))!.version, two!.version, 'unchanged: no new version');

      const [latest, earlier] = (await store.history.listHistory(1n, { limit: 5 }))!;
      assert.deepEqual(
        { ...latest!, id: undefined },
        { id: undefined, petId: 1n, previousQuantity: 6, quantity: 9, at, keyId: 'cli:import', keyName: 'import', requestId: plan.change.requestId, reason: 'correction' },
      );
      assert.match(plan.change.requestId, /^import-[0-9a-f-]{36}$/);
      assert.equal(earlier!.quantity, 6, 'chained after the PATCH before it');
      assert.deepEqual((await store.history.listHistory(INT64_MAX, { limit: 5 }))!.map((h) => [h.previousQuantity, h.quantity, h.keyName]), [[0, 12, 'import']]);
      assert.deepEqual(await store.history.listHistory(2n, { limit: 5 }), [], 'unchanged: no history row');
      assert.deepEqual(await store.history.listHistory(3n, { limit: 5 }), [], 'created: no history row');
      // A PATCH after the import chains onto its row.
      await setQuantity(store, 1n, 10);
      assert.deepEqual((await store.history.listHistory(1n, { limit: 5 }))!.map((h) => h.quantity), [10, 9, 6]);
    });

    it('upsert refuses, by row, an entry whose stored status differs, and imports nothing (decisions 5.8)', async (t) => {
      const store = await openTestStore(backend, t);
      await store.changes.addItems([item(1n, 5, 'available'), item(2n, 3, 'pending'), item(4n, 1, 'sold')]);
      await store.changes.retireEntry(4n, { force: true, at: new Date() });
      await unchangedBy(store, async () => {
        const outcome = await store.changes.importItems(importSource([item(1n, 9), item(2n, 3, 'sold'), item(3n, 1)]), importPlan(true));
        assert.deepEqual(outcome, {
          applied: false,
          conflicts: [{ kind: 'status_differs', at: { line: 3 }, petId: 2n, stored: 'pending', given: 'sold' }],
          conflictRows: 1,
        });
      });
      assert.deepEqual(await store.history.listHistory(1n, { limit: 5 }), []);
      // A retired entry is revived with the file's status, which it may change.
      assert.deepEqual(applied(await store.changes.importItems(importSource([item(4n, 2, 'available')]), importPlan(true))), { created: 1, updated: 0, unchanged: 0 });
      assert.deepEqual(await store.entries.getEntry(4n).then((e) => e?.item), item(4n, 2, 'available'));
    });

    it(`a write of more than ${BULK_WRITE.toLocaleString('en-US')} entries tells readers to read the whole list again`, async (t) => {
      const store = await openTestStore(backend, t);
      await store.changes.addItems([item(1n), item(2n)]);
      await store.changes.retireEntry(2n, { force: true, at: new Date() });
      const before = await store.entries.readVersion();
      const rows = Array.from({ length: BULK_WRITE + 1 }, (_, i) => item(BigInt(10 + i), i % 7));
      assert.deepEqual(applied(await store.changes.importItems(importSource(rows, { batch: 4000 }), importPlan())), { created: rows.length, updated: 0, unchanged: 0 });
      const changes = await store.entries.changesSince(before);
      assert.equal(changes.complete, true);
      assert.deepEqual(changes.items, [item(1n), ...rows]);
      const after = changes.version;
      await setQuantity(store, 10n, 99);
      assert.deepEqual(await store.entries.changesSince(after), { version: after + 1, items: [item(10n, 99)], removed: [], complete: false, eventsHead: 3 + rows.length + 1 });
    });
  });
}
