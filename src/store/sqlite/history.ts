import type Database from 'better-sqlite3';
import type { HistoryEntry } from '../../domain/history.js';
import type { ChangeReason } from '../../schemas/inventory.js';
import type { History } from '../store.js';
import type { Run } from './connection.js';

type HistoryRow = [id: bigint, petId: bigint, previous: bigint, quantity: bigint, at: string, keyId: string, keyName: string, requestId: string, reason: string | null];

/** The SQLite store's history: each row links to the pet's previous one, so a page is a walk, with no index to keep on every change. */
export function history(db: Database.Database, run: Run): History {
  const stmt = {
    hasEntry: db.prepare('SELECT 1 FROM inventory WHERE pet_id = ?').pluck(),
    // Newest first, following each row's link to the pet's previous one, from the row before `before` (or the newest).
    page: db
      .prepare(
        `WITH RECURSIVE walk(id, n) AS (
           SELECT CASE WHEN :before IS NULL THEN (SELECT last_history_id FROM inventory WHERE pet_id = :pet)
                       ELSE (SELECT prev_id FROM inventory_history WHERE id = :before AND pet_id = :pet) END, 1
           UNION ALL
           SELECT h.prev_id, walk.n + 1 FROM walk JOIN inventory_history h ON h.id = walk.id WHERE walk.n < :limit AND h.prev_id IS NOT NULL
         )
         SELECT h.id, h.pet_id, h.previous_quantity, h.quantity, h.at, h.key_id, h.key_name, h.request_id, h.reason
         FROM walk JOIN inventory_history h ON h.id = walk.id ORDER BY walk.n`,
      )
      .raw(true)
      .safeIntegers(true),
  };
  return {
    listHistory: async (petId, page) =>
      run(() => {
        if (stmt.hasEntry.get(petId) === undefined) return undefined;
        return (stmt.page.all({ pet: petId, before: page.before ?? null, limit: page.limit }) as HistoryRow[]).map(toHistoryEntry);
      }),
  };
}

function toHistoryEntry(row: HistoryRow): HistoryEntry {
  return {
    id: row[0],
    petId: row[1],
    previousQuantity: Number(row[2]),
    quantity: Number(row[3]),
    at: new Date(row[4]),
    keyId: row[5],
    keyName: row[6],
    requestId: row[7],
    reason: row[8] as ChangeReason | null,
  };
}
