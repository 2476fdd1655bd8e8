import type { HistoryEntry } from '../../domain/history.js';
import type { History } from '../store.js';
import type { Pooled, Statement } from './connection.js';

const STATEMENTS = {
  hasEntry: { name: 'inventory-has', text: 'SELECT 1 FROM inventory WHERE pet_id = $1' },
  page: {
    name: 'history-page',
    text: `SELECT id, pet_id AS "petId", previous_quantity AS "previousQuantity", quantity, at, key_id AS "keyId", key_name AS "keyName",
             request_id AS "requestId", reason
           FROM inventory_history
           WHERE pet_id = $1 AND ($2::bigint IS NULL OR (id < $2 AND EXISTS (SELECT 1 FROM inventory_history b WHERE b.id = $2 AND b.pet_id = $1)))
           ORDER BY id DESC LIMIT $3`,
  },
} as const satisfies Record<string, Statement>;

/** The PostgreSQL store's history: a page is a range of the (pet_id, id) index. */
export function history({ query }: Pooled): History {
  return {
    async listHistory(petId, page) {
      const id = petId.toString();
      const [exists, rows] = await Promise.all([
        query(STATEMENTS.hasEntry, [id]),
        query<HistoryEntry>(STATEMENTS.page, [id, page.before?.toString() ?? null, page.limit]),
      ]);
      return exists.rowCount === 0 ? undefined : rows.rows;
    },
  };
}
