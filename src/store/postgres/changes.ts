import { repeatedPet, type ChangeBatch, type ChangeBatchResult, type ChangeResult, type QuantityChange, type RetireOutcome } from '../../domain/inventory.js';
import type { InventoryItem } from '../../schemas/inventory.js';
import type { GroupCommit } from '../group-commit.js';
import { DuplicatePetError, type Changes } from '../store.js';
import { appendEvents, bumpStoreState } from './change-log.js';
import type { EventLog } from './events.js';
import { inTransaction, type Pooled, type Statement } from './connection.js';
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
  // store_state last, as in every write (change-log.ts): the store version, and the seqs of the entries' events, in petId order.
  stampInserted: {
    name: 'inventory-stamp-inserted',
    text: `WITH s AS (${bumpStoreState({ count: 'cardinality($1::bigint[])', notify: '$2' })}),
                e AS (${appendEvents(
                  's.events_head - cardinality($1::bigint[]) + row_number() OVER (ORDER BY i.pet_id)',
                  'created',
                  { at: 'i.updated_at', petId: 'i.pet_id', status: 'i.status', after: 'i.quantity', version: 'i.version' },
                  'inventory i, s WHERE i.pet_id = ANY($1::bigint[])',
                )})
           UPDATE inventory SET change_seq = s.version FROM s WHERE pet_id = ANY($1::bigint[])`,
  },
  // The entry's row first, then store_state, as in every write; the version is bumped only when it retires.
  lockEntry: { name: 'inventory-lock', text: 'SELECT pet_id AS "petId", quantity, status FROM inventory WHERE pet_id = $1 AND retired_at IS NULL FOR UPDATE' },
  // A retirement is a new version of the entry (decisions 5.9), so its event is newer than the entry's last change.
  retire: {
    name: 'inventory-retire',
    text: `WITH s AS (${bumpStoreState({ count: '1', notify: '$3' })}),
                r AS (UPDATE inventory SET retired_at = $2, updated_at = $2, change_seq = s.version, version = inventory.version + 1
                      FROM s WHERE pet_id = $1 RETURNING inventory.pet_id, inventory.status, inventory.quantity, inventory.version)
           ${appendEvents(
             's.events_head',
             'deleted',
             { at: '$2::timestamptz', petId: 'r.pet_id', status: 'r.status', before: 'r.quantity', after: 'r.quantity', version: 'r.version' },
             's, r',
           )}`,
  },
} as const satisfies Record<string, Statement>;

/**
 * The PostgreSQL store's writes of entries. Changes of quantity go through the group commit: one
 * statement per batch (one round trip, one commit), or one transaction when changes carry
 * idempotency keys (apply-batch.ts). Creations and retirements lock their rows first and
 * store_state last, as every write does, so writers of several instances never deadlock; each
 * appends its events with seqs taken in that last update (change-log.ts). A ChangeBatch is one
 * transaction of its own (`applyBatch`, apply-change-batch.ts).
 */
export function changes(
  { pool, run }: Pooled,
  groupCommit: GroupCommit<QuantityChange, ChangeResult>,
  log: EventLog,
  applyBatch: (batch: ChangeBatch) => Promise<ChangeBatchResult>,
): Changes {
  return {
    applyChange: (change) => groupCommit.submit(change),
    applyBatch,
    async addItems(items) {
      // A statement may update a row once: a petId repeated in the batch is the duplicate, unless one before it already is.
      const repeated = repeatedPet(items);
      const unique = repeated < 0 ? items : items.slice(0, repeated);
      await run(() =>
        inTransaction(pool, async (client) => {
          // change_seq is set from the bumped version at the end, keeping store_state the last lock taken, as in applyChange.
          const { rows } = await client.query<{ petId: bigint }>(STATEMENTS.insertItems.text, [
            unique.map((i) => i.petId.toString()),
            unique.map((i) => i.quantity),
            unique.map((i) => i.status),
          ]);
          const inserted = new Set(rows.map((r) => r.petId));
          // The first item that was not inserted is the one SQLite's row-by-row insert stops at.
          const refused = unique.find((i) => !inserted.has(i.petId)) ?? items[repeated];
          if (refused) throw new DuplicatePetError(refused.petId);
          await client.query(STATEMENTS.stampInserted.text, [rows.map((r) => r.petId.toString()), log.channel]);
        }),
      );
      if (items.length > 0) log.appended.emit();
    },
    async retireEntry(petId, options) {
      const outcome = await run(() =>
        inTransaction(pool, async (client): Promise<RetireOutcome> => {
          const item = (await client.query<InventoryItem>(STATEMENTS.lockEntry.text, [petId.toString()])).rows[0];
          if (!item) return { kind: 'not_found' };
          if (item.quantity > 0 && !options.force) return { kind: 'in_stock', item };
          await client.query(STATEMENTS.retire.text, [petId.toString(), options.at.toISOString(), log.channel]);
          return { kind: 'retired', item };
        }),
      );
      if (outcome.kind === 'retired') log.appended.emit();
      return outcome;
    },
    async importItems(source, plan) {
      const outcome = await run(() => importItems(pool, source, plan, log.channel));
      if (outcome.applied && outcome.created + outcome.updated > 0) log.appended.emit();
      return outcome;
    },
  };
}
