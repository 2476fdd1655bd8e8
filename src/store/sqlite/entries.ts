import type Database from 'better-sqlite3';
import type { InventoryEntry } from '../../domain/inventory.js';
import type { InventoryItem, PetStatus } from '../../schemas/inventory.js';
import type { Entries, EntryChanges } from '../store.js';
import { changeLogReader } from './change-log.js';
import { LIMIT, type Run } from './connection.js';

type ItemRow = [petId: bigint, quantity: bigint, status: string];
/** A row the change log names: retired is 1 for an entry retired since. */
type ChangedRow = [...ItemRow, retired: number];
type EntryRow = [...ItemRow, version: bigint, lastHistoryId: bigint | null];

/** The SQLite store's reads of entries, on the event loop's connection (WAL: they never wait for the writer). */
export function entries(db: Database.Database, run: Run): Entries {
  const safe = (sql: string) => db.prepare(sql).raw(true).safeIntegers(true);
  const stmt = {
    list: safe('SELECT pet_id, quantity, status FROM inventory WHERE retired_at IS NULL ORDER BY pet_id'),
    // Keyset pages: a range of the primary key, however deep into the list.
    firstPage: safe(`SELECT pet_id, quantity, status FROM inventory WHERE retired_at IS NULL ORDER BY pet_id LIMIT ${LIMIT}`),
    nextPage: safe(`SELECT pet_id, quantity, status FROM inventory WHERE pet_id > ? AND retired_at IS NULL ORDER BY pet_id LIMIT ${LIMIT}`),
    readVersion: db.prepare('SELECT version FROM store_state WHERE id = 1').pluck(),
    // The events head moves with the version, in the same row: read together, the list at `version` holds every event up to it.
    readState: db.prepare('SELECT version, events_head FROM store_state WHERE id = 1').raw(true),
  };
  const entry = entryReader(db);
  const changedSince = changeLogReader(db, 'pet_id, quantity, status, retired_at IS NOT NULL');
  // One read transaction: the version and the entries come from one snapshot.
  const changesSince = db.transaction((after: number): EntryChanges => {
    const [version, eventsHead] = stmt.readState.get() as [number, number];
    if (version === after) return { version, items: [], removed: [], complete: false, eventsHead };
    const changed = after < 0 ? undefined : (changedSince(after) as ChangedRow[] | undefined);
    if (!changed) return { version, items: (stmt.list.all() as ItemRow[]).map(toItem), removed: [], complete: true, eventsHead };
    const items: InventoryItem[] = [];
    const removed: bigint[] = [];
    for (const row of changed) {
      if (row[3]) removed.push(row[0]);
      else items.push(toItem([row[0], row[1], row[2]]));
    }
    return { version, items, removed, complete: false, eventsHead };
  });

  return {
    listInventory: async () => run(() => (stmt.list.all() as ItemRow[]).map(toItem)),
    listInventoryPage: async (after, limit) =>
      run(() => ((after === undefined ? stmt.firstPage.all(limit) : stmt.nextPage.all(after, limit)) as ItemRow[]).map(toItem)),
    getEntry: async (petId) => run(() => entry(petId)),
    readVersion: async () => run(() => Number(stmt.readVersion.get())),
    changesSince: async (after) =>
      run(() => {
        // Most calls find nothing new: one row answers those, without a transaction.
        const [version, eventsHead] = stmt.readState.get() as [number, number];
        return version === after ? { version, items: [], removed: [], complete: false, eventsHead } : changesSince.deferred(after);
      }),
  };
}

/** One entry with its version, by petId (none when retired): the read of the ports. */
export function entryReader(db: Database.Database): (petId: bigint) => InventoryEntry | undefined {
  const read = linkedEntryReader(db);
  return (petId) => read(petId)?.entry;
}

/** An entry and the id of its newest history row (null before its first change): what its next history row links to. */
export interface LinkedEntry {
  entry: InventoryEntry;
  lastHistoryId: bigint | null;
}

/** entryReader with the entry's newest history row: the batch applier's read, so the history row it writes needs no second read of the entry. */
export function linkedEntryReader(db: Database.Database): (petId: bigint) => LinkedEntry | undefined {
  // A retired entry is no entry: reads and changes of quantity pass it by.
  const get = db
    .prepare('SELECT pet_id, quantity, status, version, last_history_id FROM inventory WHERE pet_id = ? AND retired_at IS NULL')
    .raw(true)
    .safeIntegers(true);
  return (petId) => {
    const row = get.get(petId) as EntryRow | undefined;
    return row && { entry: { item: toItem([row[0], row[1], row[2]]), version: Number(row[3]) }, lastHistoryId: row[4] };
  };
}

function toItem(row: ItemRow): InventoryItem {
  return { petId: row[0], quantity: Number(row[1]), status: row[2] as PetStatus };
}
