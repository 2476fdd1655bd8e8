import type { InventoryEntry } from '../../domain/inventory.js';
import type { InventoryItem } from '../../schemas/inventory.js';
import type { Entries } from '../store.js';
import type { Pooled, Statement } from './connection.js';

/** Selected under the names of InventoryItem, so a row is the item. */
export const ITEM_COLUMNS = 'pet_id AS "petId", quantity, status';

const STATEMENTS = {
  list: { name: 'inventory-list', text: `SELECT ${ITEM_COLUMNS} FROM inventory WHERE retired_at IS NULL ORDER BY pet_id` },
  // Keyset pages: a range of the primary key, however deep into the list.
  firstPage: { name: 'inventory-first-page', text: `SELECT ${ITEM_COLUMNS} FROM inventory WHERE retired_at IS NULL ORDER BY pet_id LIMIT $1` },
  nextPage: { name: 'inventory-next-page', text: `SELECT ${ITEM_COLUMNS} FROM inventory WHERE pet_id > $1 AND retired_at IS NULL ORDER BY pet_id LIMIT $2` },
  get: { name: 'inventory-get', text: `SELECT ${ITEM_COLUMNS}, version FROM inventory WHERE pet_id = $1 AND retired_at IS NULL` },
  readVersion: { name: 'store-version', text: 'SELECT version FROM store_state WHERE id = 1' },
  // One statement is one snapshot: the version, the events head (moved with it) and the rows agree.
  // From before a bulk write (reload_from), every entry: the whole list.
  changesSince: {
    name: 'inventory-changes-since',
    text: `SELECT s.version AS "storeVersion", s.events_head AS "eventsHead", s.reload_from > $1 AS reload, i.pet_id AS "petId", i.quantity, i.status, i.retired_at IS NOT NULL AS retired
           FROM store_state s LEFT JOIN inventory i ON i.change_seq > (CASE WHEN s.reload_from > $1 THEN -1 ELSE $1 END)
           WHERE s.id = 1 ORDER BY i.pet_id`,
  },
} as const satisfies Record<string, Statement>;

type EntryRow = InventoryItem & { version: bigint };
type ChangedRow = { storeVersion: bigint; eventsHead: bigint; reload: boolean; petId: bigint | null; retired: boolean | null } & Omit<InventoryItem, 'petId'>;

/** The PostgreSQL store's reads of entries: each one statement, so one snapshot. */
export function entries({ query }: Pooled): Entries {
  return {
    listInventory: async () => (await query<InventoryItem>(STATEMENTS.list)).rows,
    async listInventoryPage(after, limit) {
      const { rows } =
        after === undefined
          ? await query<InventoryItem>(STATEMENTS.firstPage, [limit])
          : await query<InventoryItem>(STATEMENTS.nextPage, [after.toString(), limit]);
      return rows;
    },
    async getEntry(petId) {
      const row = (await query<EntryRow>(STATEMENTS.get, [petId.toString()])).rows[0];
      return row && toEntry(row);
    },
    readVersion: async () => Number((await query<{ version: bigint }>(STATEMENTS.readVersion)).rows[0]!.version),
    async changesSince(after) {
      const { rows } = await query<ChangedRow>(STATEMENTS.changesSince, [after]);
      const complete = after < 0 || rows[0]!.reload;
      const items: InventoryItem[] = [];
      const removed: bigint[] = [];
      for (const r of rows) {
        if (r.petId === null) continue;
        if (!r.retired) items.push({ petId: r.petId, quantity: r.quantity, status: r.status });
        else if (!complete) removed.push(r.petId);
      }
      return { version: Number(rows[0]!.storeVersion), items, removed, complete, eventsHead: Number(rows[0]!.eventsHead) };
    },
  };
}

function toEntry({ version, ...item }: EntryRow): InventoryEntry {
  return { item, version: Number(version) };
}
