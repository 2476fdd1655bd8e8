import type Database from 'better-sqlite3';
import type { NewEvent } from '../../domain/event.js';
import type { InventoryEntry, QuantityChange } from '../../domain/inventory.js';
import { eventOf, type WriteFacts, type WriteKind } from '../../domain/write-kinds.js';
import { BULK_WRITE } from '../store.js';
import { EVENT_COLUMNS, eventColumns, eventValues, type FactsSql, type KindsSql } from '../write-kinds-sql.js';
import { perConnection } from './connection.js';
import { isoTime } from './iso-time.js';

/**
 * What a write of entries records on SQLite, for every write (the group commit's changes, a
 * ChangeBatch, the CLI's add, adjust and remove, the first run, an import), as the domain table
 * of write kinds says (domain/write-kinds.ts): a change's history row and the entry's new count
 * and version; the write's events; and last in its transaction, the store version, the events
 * head and the change log (table inventory_changes): one row per committed write of entries, the
 * store version it made and the pets it wrote, as a JSON array of their exact ids, or '*' for a
 * bulk write. changesSince reads the log instead of an index on every entry, which each change
 * would have had to move (a page written per change). Call inside an IMMEDIATE transaction.
 */
export interface ChangeLog {
  /**
   * Writes an applied change's history row, linked to the pet's newest one (`lastHistoryId`,
   * read with `current`), and the entry's count and version: the entry as the change leaves it.
   */
  change(change: QuantityChange, current: InventoryEntry, lastHistoryId: bigint | null, quantity: number): InventoryEntry;
  /**
   * Commits the changes this transaction applied through `change`, in that order (none: nothing
   * to commit): their events, kind updated, made of their history rows and entries by one
   * statement per run of changes of one source rather than one per change, unless `omitEvents`.
   */
  changed(applied: readonly Pick<QuantityChange, 'petId' | 'source'>[], omitEvents: boolean): void;
  /** Commits a write of entries made one by one (created, deleted): the event of each, from its facts, in the order given. */
  wrote(kind: WriteKind, facts: readonly WriteFacts[]): void;
  /**
   * Commits a write whose statement appended `appended` events itself (appendEvents), or that appends
   * these events (a reservation's, with the changes of its sale), naming the pets written, or 'bulk'.
   */
  commit(petIds: readonly bigint[] | 'bulk', appended: number | readonly NewEvent[]): void;
}

/** Rows kept: a reader whose cached version is older than the oldest row reads the whole list again. */
export const CHANGE_LOG_KEPT = 10_000;
/** How often, in store versions, rows past CHANGE_LOG_KEPT are dropped. */
const PRUNE_EVERY = 1000;

/** The events of rows (a VALUES list, or a SELECT of a seq then eventValues): the one insert of events. */
function insertEvents(rows: string): string {
  return `INSERT INTO inventory_events (seq, ${EVENT_COLUMNS.join(', ')}) ${rows}`;
}

/**
 * The statement that appends the events of the rows of `from` (a FROM clause, with its WHERE and
 * ORDER BY), each of its kind, the seq of each given by `seq`: for a write that appends its events
 * in SQL (an import), then commits with how many it appended. The events head is read in the
 * transaction, under SQLite's one write lock: no other writer hands out a seq until it commits.
 */
export function appendEvents(seq: string, kinds: KindsSql, facts: FactsSql, from: string): string {
  return insertEvents(`SELECT ${seq}, ${eventValues(kinds, facts)} FROM ${from}`);
}

/** The insert of history rows (a VALUES list, or a SELECT of the same columns), each linked to its pet's previous one (prev_id). */
export function insertHistory(rows: string): string {
  return `INSERT INTO inventory_history (pet_id, previous_quantity, quantity, at, key_id, key_name, request_id, reason, prev_id) ${rows}`;
}

/**
 * The events of the last changes of a transaction (ChangeLog.changed): its changes wrote the
 * newest history rows, one each, with consecutive ids, so the last :count are theirs, and the
 * changes from :from up to :to (by their place) have the rows after the first :from; a pet changes
 * at most once a transaction (group-commit.ts, domain repeatedPet), so its entry holds the status
 * and version its change left. The bounds are written out in the WHERE, so SQLite reads a range
 * of rowids, not the whole history. :source is the changes' (api or cli).
 */
const LAST = '(SELECT max(id) FROM inventory_history) - :count';
export const UPDATED_EVENTS = appendEvents(
  `(SELECT events_head FROM store_state WHERE id = 1) + h.id - (${LAST})`,
  'updated',
  {
    at: 'h.at',
    petId: 'h.pet_id',
    status: 'i.status',
    before: 'h.previous_quantity',
    after: 'h.quantity',
    version: 'i.version',
    reason: 'h.reason',
    source: ':source',
    keyId: 'h.key_id',
    requestId: 'h.request_id',
  },
  `inventory_history h JOIN inventory i ON i.pet_id = h.pet_id WHERE h.id > ${LAST} + :from AND h.id <= ${LAST} + :to ORDER BY h.id`,
);

/** The connection's ChangeLog, its statements prepared at its first write. */
export const changeLog = perConnection(prepareChangeLog);

function prepareChangeLog(db: Database.Database): ChangeLog {
  const stmt = {
    // The previous quantity and the link to the pet's newest history row come from the entry read (under the write lock, so current).
    history: db.prepare(insertHistory('VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)')),
    update: db.prepare('UPDATE inventory SET quantity = ?, version = version + 1, last_history_id = last_insert_rowid(), updated_at = ? WHERE pet_id = ?'),
    updatedEvents: db.prepare(UPDATED_EVENTS),
    // Its seq the table's rowid, given: no second index to keep.
    event: db.prepare(insertEvents(`VALUES (${['?', ...EVENT_COLUMNS.map(() => '?')].join(', ')})`)),
    readState: db.prepare('SELECT version, events_head FROM store_state WHERE id = 1').raw(true),
    setState: db.prepare('UPDATE store_state SET version = ?, events_head = ? WHERE id = 1'),
    log: db.prepare('INSERT INTO inventory_changes (seq, pet_ids) VALUES (?, ?)'),
    prune: db.prepare('DELETE FROM inventory_changes WHERE seq <= ?'),
  };

  /**
   * Last in its transaction (so versions commit in order): appends `events` with the seqs after the
   * head, in the order given, or counts the number its statement appended with the seqs right after
   * the head; bumps the store version and the events head together; logs the pets written, or '*'
   * for a bulk write (more than BULK_WRITE, or 'bulk').
   */
  const commit = (petIds: readonly bigint[] | 'bulk', events: readonly NewEvent[] | number): void => {
    const [version, head] = stmt.readState.get() as [number, number];
    const seq = version + 1;
    let last = head;
    if (typeof events === 'number') last += events;
    else for (const e of events) stmt.event.run(++last, ...eventRow(e));
    stmt.setState.run(seq, last);
    stmt.log.run(seq, petIds === 'bulk' || petIds.length > BULK_WRITE ? '*' : `[${petIds.join(',')}]`);
    if (seq % PRUNE_EVERY === 0) stmt.prune.run(seq - CHANGE_LOG_KEPT);
  };

  return {
    change(change, current, lastHistoryId, quantity) {
      const at = isoTime(change.at);
      stmt.history.run(change.petId, current.item.quantity, quantity, at, change.keyId, change.keyName, change.requestId, change.reason, lastHistoryId);
      stmt.update.run(quantity, at, change.petId);
      // No RETURNING: the new version is the one read + 1, under the write lock.
      return { item: { ...current.item, quantity }, version: current.version + 1 };
    },
    changed(applied, omitEvents) {
      const count = applied.length;
      if (count === 0) return;
      if (!omitEvents) {
        // On a server every change is the API's: one run, one statement.
        for (let from = 0, to = 1; to <= count; to++) {
          const source = applied[from]!.source;
          if (to < count && applied[to]!.source === source) continue;
          stmt.updatedEvents.run({ count, from, to, source });
          from = to;
        }
      }
      commit(
        applied.map((c) => c.petId),
        omitEvents ? 0 : count,
      );
    },
    wrote(kind, facts) {
      commit(
        facts.map((f) => f.petId),
        facts.map((f) => eventOf(kind, f)),
      );
    },
    commit,
  };
}

/** A new event's columns after its seq, in EVENT_COLUMNS' order, its time as SQLite keeps times. */
function eventRow(e: NewEvent): unknown[] {
  const row = eventColumns(e);
  row[1] = isoTime(e.occurredAt);
  return row;
}

/**
 * The pets written after store version `after`, as rows of `columns` of inventory ordered by
 * petId; undefined when the log cannot tell (a bulk creation since, or rows already pruned) or
 * names more than BULK_WRITE pets since, and the whole list must be read. Call inside a read transaction, with the version read there.
 */
export function changeLogReader(db: Database.Database, columns: string): (after: number) => unknown[] | undefined {
  const oldest = db.prepare('SELECT min(seq) FROM inventory_changes').pluck();
  const bulkSince = db.prepare("SELECT 1 FROM inventory_changes WHERE seq > ? AND pet_ids = '*' LIMIT 1").pluck();
  // Past BULK_WRITE pets named since, one full read costs less than the lookups: an import writes in chunks of fewer each.
  const namedSince = db.prepare("SELECT coalesce(sum(json_array_length(pet_ids)), 0) FROM inventory_changes WHERE seq > ? AND pet_ids <> '*'").pluck();
  // Row lookups by petId, no scan.
  const changedSince = db
    .prepare(
      `SELECT ${columns} FROM inventory
       WHERE pet_id IN (SELECT j.value FROM inventory_changes c, json_each(c.pet_ids) j WHERE c.seq > ? AND c.pet_ids <> '*')
       ORDER BY pet_id`,
    )
    .raw(true)
    .safeIntegers(true);
  return (after) => {
    const first = oldest.get() as number | null;
    if (first === null || after < first - 1 || bulkSince.get(after) !== undefined || (namedSince.get(after) as number) > BULK_WRITE) return undefined;
    return changedSince.all(after);
  };
}
