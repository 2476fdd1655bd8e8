import type Database from 'better-sqlite3';
import type { InventoryEntry } from '../../domain/inventory.js';
import type { InventoryItem, PetStatus } from '../../schemas/inventory.js';
import type { Entries, EntryChanges } from '../store.js';
import { changeLogReader } from './change-log.js';
import { LIMIT, type Run } from './connection.js';
import { lapsedHoldsReader } from './reservation-reads.js';

type ItemRow = [petId: bigint, quantity: bigint, status: string, reserved: bigint];
/** A row the change log names: retired is 1 for an entry retired since. */
type ChangedRow = [...ItemRow, retired: number];
type EntryRow = [...ItemRow, version: bigint, lastHistoryId: bigint | null];

/** Holds past their expiry by pet, which a read leaves out (decisions 12.4). */
type Lapsed = ReadonlyMap<bigint, number>;

/**
 * The SQLite store's reads of entries, on the event loop's connection (WAL: they never wait for the
 * writer). Each reads the holds past their expiry in its own snapshot and leaves them out.
 */
export function entries(db: Database.Database, run: Run): Entries {
  const safe = (sql: string) => db.prepare(sql).raw(true).safeIntegers(true);
  const stmt = {
    list: safe('SELECT pet_id, quantity, status, reserved FROM inventory WHERE retired_at IS NULL ORDER BY pet_id'),
    // Keyset pages: a range of the primary key, however deep into the list.
    firstPage: safe(`SELECT pet_id, quantity, status, reserved FROM inventory WHERE retired_at IS NULL ORDER BY pet_id LIMIT ${LIMIT}`),
    nextPage: safe(`SELECT pet_id, quantity, status, reserved FROM inventory WHERE pet_id > ? AND retired_at IS NULL ORDER BY pet_id LIMIT ${LIMIT}`),
    // The pets whose holds lapsed, read again whole: the list they are in must show them without those holds.
    lapsedItems: safe(
      `SELECT pet_id, quantity, status, reserved, retired_at IS NOT NULL FROM inventory WHERE pet_id IN (SELECT value FROM json_each(?)) ORDER BY pet_id`,
    ),
    readVersion: db.prepare('SELECT version FROM store_state WHERE id = 1').pluck(),
    // The events head moves with the version, in the same row: read together, the list at `version` holds every event up to it.
    readState: db.prepare('SELECT version, events_head FROM store_state WHERE id = 1').raw(true),
  };
  const entry = entryReader(db);
  const lapsedHolds = lapsedHoldsReader(db);
  const changedSince = changeLogReader(db, 'pet_id, quantity, status, reserved, retired_at IS NOT NULL');
  // One read transaction: the version, the lapsed holds and the entries come from one snapshot.
  const changesSince = db.transaction((after: number): EntryChanges => {
    const [version, eventsHead] = stmt.readState.get() as [number, number];
    const { held, lapsed: token } = lapsedHolds(Date.now());
    const lapsed = token === '' ? {} : { lapsed: token };
    const items: InventoryItem[] = [];
    const removed: bigint[] = [];
    if (version === after && held.size === 0) return { version, items, removed, complete: false, eventsHead };
    const changed = after < 0 ? undefined : version === after ? [] : (changedSince(after) as ChangedRow[] | undefined);
    if (!changed) return { version, items: (stmt.list.all() as ItemRow[]).map((r) => toItem(r, held)), removed, complete: true, eventsHead, ...lapsed };
    // The pets whose holds lapsed are read again even when nothing else changed: their available stock did.
    const rows = new Map<bigint, ChangedRow>(changed.map((row) => [row[0], row]));
    if (held.size > 0) for (const row of stmt.lapsedItems.all(`[${[...held.keys()].join(',')}]`) as ChangedRow[]) rows.set(row[0], row);
    for (const row of [...rows.values()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))) {
      if (row[4]) removed.push(row[0]);
      else items.push(toItem([row[0], row[1], row[2], row[3]], held));
    }
    return { version, items, removed, complete: false, eventsHead, ...lapsed };
  });
  const list = db.transaction((after: bigint | undefined, limit: number | undefined): InventoryItem[] => {
    const { held } = lapsedHolds(Date.now());
    const rows = (limit === undefined ? stmt.list.all() : after === undefined ? stmt.firstPage.all(limit) : stmt.nextPage.all(after, limit)) as ItemRow[];
    return rows.map((r) => toItem(r, held));
  });
  const one = db.transaction((petId: bigint) => {
    const found = entry(petId);
    const held = found?.item.reserved ? lapsedHolds(Date.now()).held : undefined;
    return found && held?.has(petId) ? { ...found, item: withoutLapsed(found.item, held) } : found;
  });

  return {
    listInventory: async () => run(() => list.deferred(undefined, undefined)),
    listInventoryPage: async (after, limit) => run(() => list.deferred(after, limit)),
    getEntry: async (petId) => run(() => one.deferred(petId)),
    readVersion: async () => run(() => Number(stmt.readVersion.get())),
    changesSince: async (after) => run(() => changesSince.deferred(after)),
  };
}

/** An entry without what its lapsed holds still hold. */
function withoutLapsed(item: InventoryItem, held: Lapsed): InventoryItem {
  const lapsed = held.get(item.petId) ?? 0;
  if (lapsed === 0) return item;
  const { reserved = 0, ...count } = item;
  return reserved > lapsed ? { ...count, reserved: reserved - lapsed } : count;
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
    .prepare('SELECT pet_id, quantity, status, reserved, version, last_history_id FROM inventory WHERE pet_id = ? AND retired_at IS NULL')
    .raw(true)
    .safeIntegers(true);
  return (petId) => {
    const row = get.get(petId) as EntryRow | undefined;
    return row && { entry: { item: toItem([row[0], row[1], row[2], row[3]]), version: Number(row[4]) }, lastHistoryId: row[5] };
  };
}

/** A row as an item; `reserved` only where something is held, so an entry no reservation touched reads as it always did. */
function toItem(row: ItemRow, lapsed?: Lapsed): InventoryItem {
  const reserved = Number(row[3]) - (lapsed?.get(row[0]) ?? 0);
  return reserved > 0 ? { petId: row[0], quantity: Number(row[1]), status: row[2] as PetStatus, reserved } : { petId: row[0], quantity: Number(row[1]), status: row[2] as PetStatus };
}
