import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { ImportStoppedError, type ImportPlan } from '../../../src/domain/import.js';
import type { InventoryItem } from '../../../src/schemas/inventory.js';
import type { Store } from '../../../src/store/store.js';
import { openSqliteConnection } from '../../../src/store/sqlite/connection.js';
import { IMPORT_CHUNK } from '../../../src/store/sqlite/import.js';
import { createTestDatabase } from '../../support/backends.js';
import { importPlan, importSource, stockEvents } from '../../support/store.js';

/**
 * The SQLite import writes in chunks, each its own transaction (decisions 5.8): the server's writes
 * go in between, every row is checked before the first, and each chunk checks its own rows again.
 */

const ROWS = IMPORT_CHUNK * 2 + 5;

function items(count: number): InventoryItem[] {
  return Array.from({ length: count }, (_, i) => ({ petId: BigInt(i + 1), quantity: i % 100, status: 'available' as const }));
}

/** A store on a fresh file, and a plan whose `applying` runs `meanwhile` on another connection: after the checks, before the first chunk. */
async function storeWith(t: TestContext, meanwhile: (sql: (text: string) => void) => void = () => {}): Promise<{ store: Store; plan: ImportPlan }> {
  const { store, location } = await openStore(t);
  const other = openSqliteConnection(location);
  t.after(() => other.close());
  const plan: ImportPlan = { ...importPlan(), onPhase: (phase) => phase === 'applying' && meanwhile((text) => other.exec(text)) };
  return { store, plan };
}

async function openStore(t: TestContext): Promise<{ store: Store; location: string }> {
  const db = await createTestDatabase('sqlite', t);
  return { store: await db.open(), location: db.location };
}

/** Creates pet `petId` as `pets add` would, as far as an import's checks can tell. */
const created = (petId: number) =>
  `INSERT INTO inventory (pet_id, quantity, status, created_at, updated_at) VALUES (${petId}, 1, 'available', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')`;

describe('the SQLite import, in chunks', () => {
  it(`writes ${ROWS.toLocaleString('en-US')} entries in chunks of ${IMPORT_CHUNK.toLocaleString('en-US')}, one store version each, the events contiguous in petId order`, async (t) => {
    const { store, plan } = await storeWith(t);
    const [version, head] = [await store.entries.readVersion(), await store.events.head()];
    const outcome = await store.changes.importItems(importSource(items(ROWS), { batch: 4000 }), plan);
    assert.deepEqual(outcome, { applied: true, created: ROWS, updated: 0, unchanged: 0 });
    assert.equal(await store.entries.readVersion(), version + Math.ceil(ROWS / IMPORT_CHUNK));
    assert.equal(await store.events.head(), head + ROWS);
    const petIds: bigint[] = [];
    for (let after = head; after < head + ROWS; ) {
      const page = await store.events.readEvents(after, 1000);
      petIds.push(...stockEvents(page.items).map((e) => e.petId));
      after = page.items.at(-1)!.seq;
    }
    assert.deepEqual(petIds, items(ROWS).map((i) => i.petId));
  });

  it('refuses, writing nothing, when an entry of the first chunk was created after the checks', async (t) => {
    const { store, plan } = await storeWith(t, (sql) => sql(created(3)));
    const outcome = await store.changes.importItems(importSource(items(ROWS), { batch: 4000 }), plan);
    assert.deepEqual(outcome, { applied: false, conflicts: [{ kind: 'exists', at: { line: 4 }, petId: 3n }], conflictRows: 1 });
    assert.equal((await store.entries.listInventory()).length, 1, 'only the entry created meanwhile');
  });

  it('stops at a later chunk with an entry created after the checks: the chunks before it stay, and the error says how to finish', async (t) => {
    const late = IMPORT_CHUNK + 3;
    const { store, plan } = await storeWith(t, (sql) => sql(created(late)));
    await assert.rejects(store.changes.importItems(importSource(items(ROWS), { batch: 4000 }), plan), (err: unknown) => {
      assert.ok(err instanceof ImportStoppedError, String(err));
      assert.deepEqual(err.written, { created: IMPORT_CHUNK, updated: 0, unchanged: 0 });
      assert.match(err.message, /import the same file again with --upsert/);
      return true;
    });
    assert.equal((await store.entries.listInventory()).length, IMPORT_CHUNK + 1);
    // Running the same file again with --upsert writes the rest, and leaves what was written alone.
    const again = await store.changes.importItems(importSource(items(ROWS), { batch: 4000 }), importPlan(true));
    assert.deepEqual(again, { applied: true, created: ROWS - IMPORT_CHUNK - 1, updated: 1, unchanged: IMPORT_CHUNK });
    assert.deepEqual(await store.entries.listInventory(), items(ROWS));
  });

  it('logs for changesSince the entries it wrote, not one it left alone that another write stamped at the same millisecond', async (t) => {
    const { store, location } = await openStore(t);
    const other = openSqliteConnection(location);
    t.after(() => other.close());
    // Pets 3 and 4 written at the very time the import writes (created() stamps them so), before it.
    other.exec(created(3));
    other.exec(created(4));
    const before = await store.entries.readVersion();
    const at = new Date('2026-01-01T00:00:00.000Z');
    const outcome = await store.changes.importItems(
      importSource([
        { petId: 3n, quantity: 1, status: 'available' },
        { petId: 4n, quantity: 9, status: 'available' },
        { petId: 5n, quantity: 2, status: 'sold' },
      ]),
      importPlan(true, at),
    );
    assert.deepEqual(outcome, { applied: true, created: 1, updated: 1, unchanged: 1 });
    const { items: seen, removed } = await store.entries.changesSince(before);
    assert.deepEqual(
      { items: seen, removed },
      {
        items: [
          { petId: 4n, quantity: 9, status: 'available' },
          { petId: 5n, quantity: 2, status: 'sold' },
        ],
        removed: [],
      },
    );
  });
});
