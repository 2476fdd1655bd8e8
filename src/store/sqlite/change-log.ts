import type Database from 'better-sqlite3';
import { BULK_WRITE } from '../store.js';

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
 * bumps the store version and logs the pets written, or '*' for a bulk write (more than BULK_WRITE, or 'bulk').
 */
export function changeLogWriter(db: Database.Database): (petIds: readonly bigint[] | 'bulk') => void {
  const readVersion = db.prepare('SELECT version FROM store_state WHERE id = 1').pluck();
  const setVersion = db.prepare('UPDATE store_state SET version = ? WHERE id = 1');
  const log = db.prepare('INSERT INTO inventory_changes (seq, pet_ids) VALUES (?, ?)');
  const prune = db.prepare('DELETE FROM inventory_changes WHERE seq <= ?');
  return (petIds) => {
    const seq = Number(readVersion.get()) + 1;
    setVersion.run(seq);
    log.run(seq, petIds === 'bulk' || petIds.length > BULK_WRITE ? '*' : `[${petIds.join(',')}]`);
    if (seq % PRUNE_EVERY === 0) prune.run(seq - CHANGE_LOG_KEPT);
  };
}

/**
 * The pets written after store version `after`, as rows of `columns` of inventory ordered by
 * petId; undefined when the log cannot tell (a bulk creation since, or rows already pruned), and
 * the whole list must be read. Call inside a read transaction, with the version read there.
 */
export function changeLogReader(db: Database.Database, columns: string): (after: number) => unknown[] | undefined {
  const oldest = db.prepare('SELECT min(seq) FROM inventory_changes').pluck();
  const bulkSince = db.prepare("SELECT 1 FROM inventory_changes WHERE seq > ? AND pet_ids = '*' LIMIT 1").pluck();
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
    if (first === null || after < first - 1 || bulkSince.get(after) !== undefined) return undefined;
    return changedSince.all(after);
  };
}
