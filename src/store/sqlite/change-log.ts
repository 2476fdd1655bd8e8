import type Database from 'better-sqlite3';
import type { NewEvent } from '../../domain/event.js';
import { BULK_WRITE } from '../store.js';
import { isoTime } from './iso-time.js';

/**
 * The SQLite store's change log (table inventory_changes): one row per committed write of entries,
 * the store version it made and the pets it wrote, as a JSON array of their exact ids, or '*' for a
 * bulk creation. changesSince reads it instead of an index on every entry, which each change
 * would have had to move (a page written per change).
 */

/** Rows kept: a reader whose cached version is older than the oldest row reads the whole list again. */
export const CHANGE_LOG_KEPT = 10_000;
/** How often, in store versions, rows past CHANGE_LOG_KEPT are dropped. */
const PRUNE_EVERY = 1000;

/**
 * Records a committed write of entries, last in its transaction (so versions commit in order):
 * appends its events, bumps the store version and the events head together, and logs the pets
 * written, or '*' for a bulk write (more than BULK_WRITE, or 'bulk'). `events` are appended with
 * the seqs after the head, in the order given; a number is how many the write appended itself,
 * with the seqs right after the head (read in its transaction: SQLite's one write lock keeps any
 * other writer out until it commits, so seqs are handed out in commit order).
 */
export function changeLogWriter(db: Database.Database): (petIds: readonly bigint[] | 'bulk', events: readonly NewEvent[] | number) => void {
  const readState = db.prepare('SELECT version, events_head FROM store_state WHERE id = 1').raw(true);
  const setState = db.prepare('UPDATE store_state SET version = ?, events_head = ? WHERE id = 1');
  const log = db.prepare('INSERT INTO inventory_changes (seq, pet_ids) VALUES (?, ?)');
  const prune = db.prepare('DELETE FROM inventory_changes WHERE seq <= ?');
  const append = eventAppender(db);
  return (petIds, events) => {
    const [version, head] = readState.get() as [number, number];
    const seq = version + 1;
    let last = head;
    if (typeof events === 'number') last += events;
    else for (const event of events) append(++last, event);
    setState.run(seq, last);
    log.run(seq, petIds === 'bulk' || petIds.length > BULK_WRITE ? '*' : `[${petIds.join(',')}]`);
    if (seq % PRUNE_EVERY === 0) prune.run(seq - CHANGE_LOG_KEPT);
  };
}

/** Inserts one event with its seq (the table's rowid, given: no second index to keep). */
function eventAppender(db: Database.Database): (seq: number, event: NewEvent) => void {
  const insert = db.prepare(
    `INSERT INTO inventory_events (seq, type, occurred_at, pet_id, status, previous_quantity, quantity, version, reason, source, key_id, request_id)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  return (seq, e) =>
    void insert.run(seq, e.type, isoTime(e.occurredAt), e.petId, e.status, e.previousQuantity, e.quantity, e.version, e.reason, e.source, e.keyId, e.requestId);
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
