import type { InventoryEntry } from '../../domain/inventory.js';
import type { InventoryItem } from '../../schemas/inventory.js';
import type { Entries, EntryChanges } from '../store.js';
import type { Pooled, Statement } from './connection.js';
import { lapsedHold } from './reservation-rows.js';

/** Selected under the names of InventoryItem, so a row is the item (reserved without the lapsed holds: join `l`). */
export const ITEM_COLUMNS = 'i.pet_id AS "petId", i.quantity, i.status, i.reserved - coalesce(l.held, 0) AS reserved';

/**
 * What holds past their expiry that the sweep has not marked yet still hold of each pet, by the
 * server's clock: a range of the due index, almost always empty. Every read joins it in its own
 * statement (one snapshot) and leaves them out (decisions 12.4).
 */
const LAPSED = `l AS (SELECT ri.pet_id, sum(ri.quantity)::int AS held, max(r.expires_at) AS latest
  FROM reservations r JOIN reservation_items ri ON ri.place = r.place WHERE ${lapsedHold('r')} GROUP BY ri.pet_id)`;

const STATEMENTS = {
  list: { name: 'inventory-list', text: `WITH ${LAPSED} SELECT ${ITEM_COLUMNS} FROM inventory i LEFT JOIN l ON l.pet_id = i.pet_id WHERE i.retired_at IS NULL ORDER BY i.pet_id` },
  // Keyset pages: a range of the primary key, however deep into the list.
  firstPage: {
    name: 'inventory-first-page',
    text: `WITH ${LAPSED} SELECT ${ITEM_COLUMNS} FROM inventory i LEFT JOIN l ON l.pet_id = i.pet_id WHERE i.retired_at IS NULL ORDER BY i.pet_id LIMIT $1`,
  },
  nextPage: {
    name: 'inventory-next-page',
    text: `WITH ${LAPSED} SELECT ${ITEM_COLUMNS} FROM inventory i LEFT JOIN l ON l.pet_id = i.pet_id WHERE i.pet_id > $1 AND i.retired_at IS NULL ORDER BY i.pet_id LIMIT $2`,
  },
  get: {
    name: 'inventory-get',
    text: `WITH ${LAPSED} SELECT ${ITEM_COLUMNS}, i.version FROM inventory i LEFT JOIN l ON l.pet_id = i.pet_id WHERE i.pet_id = $1 AND i.retired_at IS NULL`,
  },
  readVersion: { name: 'store-version', text: 'SELECT version FROM store_state WHERE id = 1' },
  // What changesSince asks first: whether anything moved since the caller's version, in a statement the server plans in a
  // fraction of the whole one's time (nothing is prepared by name, so every statement is planned again). The lapsed token
  // is the whole one's: the latest expiry among the holds past it that the sweep has not marked.
  unchangedSince: {
    name: 'inventory-unchanged-since',
    text: `SELECT s.version = $1 AND s.reload_from <= $1
                  AND NOT EXISTS (SELECT 1 FROM reservations r WHERE ${lapsedHold('r')}) AS unchanged,
                  s.events_head AS "eventsHead"
           FROM store_state s WHERE s.id = 1`,
  },
  // One statement is one snapshot: the version, the events head (moved with it), the lapsed holds and the rows agree.
  // From before a bulk write (reload_from), every entry: the whole list. The pets of lapsed holds come too: their available stock changed.
  changesSince: {
    name: 'inventory-changes-since',
    text: `WITH ${LAPSED}, s AS (SELECT version, events_head, reload_from FROM store_state WHERE id = 1)
           SELECT s.version AS "storeVersion", s.events_head AS "eventsHead", s.reload_from > $1 AS reload,
                  (SELECT (extract(epoch FROM max(latest)) * 1000)::bigint FROM l) AS lapsed,
                  ${ITEM_COLUMNS}, i.retired_at IS NOT NULL AS retired
           FROM s LEFT JOIN (SELECT * FROM inventory WHERE change_seq > (SELECT CASE WHEN reload_from > $1 THEN -1 ELSE $1 END FROM s)
                             UNION SELECT * FROM inventory WHERE pet_id IN (SELECT pet_id FROM l)) i ON true
                  LEFT JOIN l ON l.pet_id = i.pet_id
           ORDER BY i.pet_id`,
  },
} as const satisfies Record<string, Statement>;

type ItemRow = Omit<InventoryItem, 'reserved'> & { reserved: number };
type EntryRow = ItemRow & { version: bigint };
type ChangedRow = { storeVersion: bigint; eventsHead: bigint; reload: boolean; lapsed: bigint | null; petId: bigint | null; retired: boolean | null } & Omit<
  ItemRow,
  'petId'
>;

/** The PostgreSQL store's reads of entries: each one statement, so one snapshot. */
export function entries({ query }: Pooled): Entries {
  return {
    listInventory: async () => (await query<ItemRow>(STATEMENTS.list)).rows.map(toItem),
    async listInventoryPage(after, limit) {
      const { rows } =
        after === undefined ? await query<ItemRow>(STATEMENTS.firstPage, [limit]) : await query<ItemRow>(STATEMENTS.nextPage, [after.toString(), limit]);
      return rows.map(toItem);
    },
    async getEntry(petId) {
      const row = (await query<EntryRow>(STATEMENTS.get, [petId.toString()])).rows[0];
      return row && toEntry(row);
    },
    readVersion: async () => Number((await query<{ version: bigint }>(STATEMENTS.readVersion)).rows[0]!.version),
    async changesSince(after) {
      // A GET's freshness read, under load many a second: usually nothing moved, and the short statement says so.
      if (after >= 0) {
        const state = (await query<{ unchanged: boolean; eventsHead: bigint }>(STATEMENTS.unchangedSince, [after])).rows[0]!;
        if (state.unchanged) return { version: after, items: [], removed: [], complete: false, eventsHead: Number(state.eventsHead) };
      }
      const { rows } = await query<ChangedRow>(STATEMENTS.changesSince, [after]);
      const first = rows[0]!;
      const complete = after < 0 || first.reload;
      const items: InventoryItem[] = [];
      const removed: bigint[] = [];
      for (const r of rows) {
        if (r.petId === null) continue;
        if (!r.retired) items.push(toItem({ petId: r.petId, quantity: r.quantity, status: r.status, reserved: r.reserved }));
        else if (!complete) removed.push(r.petId);
      }
      const changes: EntryChanges = { version: Number(first.storeVersion), items, removed, complete, eventsHead: Number(first.eventsHead) };
      if (first.lapsed !== null) changes.lapsed = String(first.lapsed);
      return changes;
    },
  };
}

/** A row as an item; `reserved` only where something is held, so an entry no reservation touched reads as it always did. */
function toItem({ petId, quantity, status, reserved }: ItemRow): InventoryItem {
  return reserved > 0 ? { petId, quantity, status, reserved } : { petId, quantity, status };
}

function toEntry({ version, ...item }: EntryRow): InventoryEntry {
  return { item: toItem(item), version: Number(version) };
}
