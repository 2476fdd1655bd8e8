import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import type { QuantityChange } from '../../src/domain/inventory.js';
import type { InventoryItem } from '../../src/schemas/inventory.js';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';
import { BACKENDS, backendSkip, createTestDatabase, type Backend } from '../support/backends.js';
import { change } from '../support/store.js';

const ITEMS: InventoryItem[] = [1n, 2n, 3n].map((petId) => ({ petId, quantity: 5, status: 'available' }));
const AT = new Date('2026-11-26T10:00:00.000Z');
const DAY_MS = 86_400_000;

/** The same changes for both stores: a group-committed batch, a condition met and one not, an idempotent one and its replay. */
function changes(): QuantityChange[][] {
  const idempotency = { key: 'k-1', fingerprint: 'fp', expiresAt: new Date(AT.getTime() + DAY_MS), recordsPerKey: 10 };
  return [
    [change(1n, 7, { at: AT }), change(2n, 8, { at: AT, reason: 'received' }), change(3n, 9, { at: AT })],
    [change(1n, 10, { at: AT, condition: { anyVersion: false, versions: [2] } })],
    [change(2n, 11, { at: AT, condition: { anyVersion: false, versions: [1] } })],
    [change(3n, 12, { at: AT, idempotency })],
    [change(3n, 12, { at: AT, idempotency })],
  ];
}

/** A store on a fresh database, opened through openStore with `omitChangeEvents`; closed when the test ends. */
async function storeOn(backend: Backend, t: TestContext, omitChangeEvents: boolean): Promise<Store> {
  const database = await createTestDatabase(backend, t);
  // Migrated and closed by the helper's store, then opened as the service opens it.
  await (await database.open()).close();
  const store = await openStore(database.databaseUrl, { omitChangeEvents });
  t.after(() => store.close());
  return store;
}

/** What the store answered and holds after `changes()`, events aside. */
async function outcome(store: Store) {
  await store.changes.addItems(ITEMS);
  const results = [];
  for (const batch of changes()) results.push(await Promise.all(batch.map((c) => store.changes.applyChange(c))));
  const entries = await Promise.all(ITEMS.map((i) => store.entries.getEntry(i.petId)));
  const history = await Promise.all(ITEMS.map((i) => store.history.listHistory(i.petId, { limit: 100 })));
  return { results, entries, history, list: await store.entries.listInventory() };
}

for (const backend of BACKENDS) {
  describe(`omitChangeEvents (the bench's store without the event log) on ${backend}`, { skip: await backendSkip(backend) }, () => {
    it('a change of quantity appends no event, and answers and stores the same as with the log', async (t) => {
      const withLog = await storeOn(backend, t, false);
      const withoutLog = await storeOn(backend, t, true);
      const expected = await outcome(withLog);
      const actual = await outcome(withoutLog);
      assert.deepEqual(actual, expected);

      // With the log: three created, then one updated per applied change (the batch of 3, one condition met, one idempotent).
      const logged = await withLog.events.readEvents(0, 100);
      assert.deepEqual(
        logged.items.map((e) => e.type),
        [...Array<string>(3).fill('inventory.created'), ...Array<string>(5).fill('inventory.updated')],
      );
      // Without: only the creations (addItems is no change of quantity), and the head did not move.
      const page = await withoutLog.events.readEvents(0, 100);
      assert.deepEqual(
        page.items.map((e) => e.type),
        Array<string>(3).fill('inventory.created'),
      );
      assert.equal(await withoutLog.events.head(), 3);
    });

    it('without the option, the store opened as the service opens it appends events (the default keeps the log)', async (t) => {
      const database = await createTestDatabase(backend, t);
      await (await database.open()).close();
      const store = await openStore(database.databaseUrl);
      t.after(() => store.close());
      await store.changes.addItems(ITEMS.slice(0, 1));
      await store.changes.applyChange(change(1n, 6));
      assert.equal(await store.events.head(), 2);
    });
  });
}
