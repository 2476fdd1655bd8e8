import type { ChangeResult, QuantityChange, RetireOutcome } from '../../domain/inventory.js';
import type { InventoryItem } from '../../schemas/inventory.js';
import type { GroupCommit } from '../group-commit.js';
import { DuplicatePetError, type Changes } from '../store.js';
import { inTransaction, type Pooled, type Statement } from './connection.js';
import { ITEM_COLUMNS } from './entries.js';
import { importItems } from './import.js';

const STATEMENTS = {
  // One statement for the whole batch (each petId once), rows in petId order as every write locks them; a retired entry
  // is revived (its version goes on, so no ETag repeats), an active one is left alone and missing from RETURNING.
  insertItems: {
    name: 'inventory-insert',
    text: `INSERT INTO inventory (pet_id, quantity, status, created_at, updated_at, change_seq)
           SELECT pet_id, quantity, status, now(), now(), 0 FROM unnest($1::bigint[], $2::integer[], $3::text[]) AS t(pet_id, quantity, status)
           ORDER BY pet_id
           ON CONFLICT (pet_id) DO UPDATE SET quantity = excluded.quantity, status = excluded.status, retired_at = NULL,
             version = inventory.version + 1, updated_at = excluded.updated_at
           WHERE inventory.retired_at IS NOT NULL RETURNING pet_id AS "petId"`,
  },
  stampInserted: {
    name: 'inventory-stamp-inserted',
    text: `WITH s AS (UPDATE store_state SET version = version + 1 WHERE id = 1 RETURNING version)
           UPDATE inventory SET change_seq = s.version FROM s WHERE pet_id = ANY($1::bigint[])`,
  },
  // The entry's row first, then store_state, as in every write; the version is bumped only when it retires.
  lockEntry: { name: 'inventory-lock', text: `SELECT ${ITEM_COLUMNS} FROM inventory WHERE pet_id = $1 AND retired_at IS NULL FOR UPDATE` },
  retire: {
    name: 'inventory-retire',
    text: `WITH s AS (UPDATE store_state SET version = version + 1 WHERE id = 1 RETURNING version)
           UPDATE inventory SET retired_at = $2, updated_at = $2, change_seq = s.version FROM s WHERE pet_id = $1`,
  },
} as const satisfies Record<string, Statement>;

/**
 * The PostgreSQL store's writes of entries. Changes of quantity go through the group commit: one
 * statement per batch (one round trip, one commit), or one transaction when changes carry
 * idempotency keys (apply-batch.ts). Creations and retirements lock their rows first and
 * store_state last, as every write does, so writers of several instances never deadlock.
 */
export function changes({ pool, run }: Pooled, groupCommit: GroupCommit<QuantityChange, ChangeResult>): Changes {
  return {
    applyChange: (change) => groupCommit.submit(change),
    async addItems(items) {
      // A statement may update a row once: a petId repeated in the batch is the duplicate, unless one before it already is.
      const seen = new Set<bigint>();
      const repeated = items.findIndex(({ petId }) => {
        if (seen.has(petId)) return true;
        seen.add(petId);
        return false;
      });
      const unique = repeated < 0 ? items : items.slice(0, repeated);
      await run(() =>
        inTransaction(pool, async (client) => {
          // change_seq is set from the bumped version at the end, keeping store_state the last lock taken, as in applyChange.
          const { rows } = await client.query<{ petId: bigint }>({
            ...STATEMENTS.insertItems,
            values: [unique.map((i) => i.petId.toString()), unique.map((i) => i.quantity), unique.map((i) => i.status)],
          });
          const inserted = new Set(rows.map((r) => r.petId));
          // The first item that was not inserted is the one SQLite's row-by-row insert stops at.
          const refused = unique.find((i) => !inserted.has(i.petId)) ?? items[repeated];
          if (refused) throw new DuplicatePetError(refused.petId);
          await client.query(STATEMENTS.stampInserted, [rows.map((r) => r.petId.toString())]);
        }),
      );
    },
    retireEntry: (petId, options) =>
      run(() =>
        inTransaction(pool, async (client): Promise<RetireOutcome> => {
          const item = (await client.query<InventoryItem>({ ...STATEMENTS.lockEntry, values: [petId.toString()] })).rows[0];
          if (!item) return { kind: 'not_found' };
          if (item.quantity > 0 && !options.force) return { kind: 'in_stock', item };
          await client.query({ ...STATEMENTS.retire, values: [petId.toString(), options.at.toISOString()] });
          return { kind: 'retired', item };
        }),
      ),
    importItems: (source, plan) => run(() => importItems(pool, source, plan)),
  };
}
