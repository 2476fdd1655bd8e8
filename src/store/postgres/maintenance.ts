import { inBatches, oldPrefix, PRUNE_BATCH } from '../pruning.js';
import type { Maintenance } from '../store.js';
import { inTransaction, type Pooled, type Statement } from './connection.js';

const STATEMENTS = {
  ping: { name: 'ping', text: 'SELECT 1' },
  syncCommit: { name: 'synchronous-commit', text: 'SHOW synchronous_commit' },
  idempotencyHolders: { name: 'idempotency-holders', text: 'SELECT api_key_id AS "keyId" FROM idempotency_counts WHERE records > 0 ORDER BY api_key_id' },
  // The count first, as every writer of an API key's records takes it (see LOCK_COUNTS): no waiting in a circle with a batch.
  lockCount: { name: 'idempotency-lock-count', text: 'SELECT 1 FROM idempotency_counts WHERE api_key_id = $1 FOR UPDATE' },
  purgeIdempotency: {
    name: 'idempotency-purge',
    text: `DELETE FROM idempotency_records WHERE api_key_id = $1 AND key_hash IN
             (SELECT key_hash FROM idempotency_records WHERE api_key_id = $1 AND expires_at <= $2 LIMIT $3)`,
  },
  // Rows in id order: the oldest first (a late commit may sit among older ids; the age check on delete leaves it).
  historyHead: { name: 'history-head', text: 'SELECT id, at FROM inventory_history WHERE id > $1 ORDER BY id LIMIT $2' },
  // Each entry's newest row stays, so the last change of its count stays visible.
  pruneHistory: {
    name: 'history-prune',
    text: `DELETE FROM inventory_history h WHERE h.id > $1 AND h.id <= $2 AND h.at < $3
             AND EXISTS (SELECT 1 FROM inventory_history n WHERE n.pet_id = h.pet_id AND n.id > h.id)`,
  },
  purgeDeliveries: {
    name: 'webhook-purge',
    text: 'DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM webhook_deliveries WHERE attempted_at < $1 LIMIT $2)',
  },
} as const satisfies Record<string, Statement>;

/** The PostgreSQL store's durability, readiness and pruning. Each instance may prune: a step another runs at the same moment waits for it briefly and deletes nothing twice. */
export function maintenance({ pool, query, run }: Pooled): Maintenance {
  return {
    async durability() {
      // Every transaction of the pool begins with the same settings (beginStatement).
      const { rows } = await query<{ synchronous_commit: string }>(STATEMENTS.syncCommit);
      return [{ connection: 'pool', settings: { synchronous_commit: rows[0]!.synchronous_commit } }];
    },
    ping: async () => void (await query(STATEMENTS.ping)),
    async purgeIdempotencyRecords(now) {
      const at = now.toISOString();
      let total = 0;
      for (const { keyId } of (await query<{ keyId: string }>(STATEMENTS.idempotencyHolders)).rows) {
        total += await inBatches(keyId, async () => {
          const deleted = await run(() =>
            inTransaction(pool, async (client) => {
              await client.query(STATEMENTS.lockCount.text, [keyId]);
              return (await client.query(STATEMENTS.purgeIdempotency.text, [keyId, at, PRUNE_BATCH])).rowCount ?? 0;
            }),
          );
          return deleted === PRUNE_BATCH ? { deleted, next: keyId } : { deleted };
        });
      }
      return total;
    },
    purgeHistory: (before) =>
      inBatches(0n, async (after) => {
        const head = (await query<{ id: bigint; at: Date }>(STATEMENTS.historyHead, [after.toString(), PRUNE_BATCH])).rows;
        const { last, more } = oldPrefix(
          head.map((r) => [r.id, r.at] as const),
          (at) => at < before,
        );
        if (last === undefined) return { deleted: 0 };
        const deleted = (await query(STATEMENTS.pruneHistory, [after.toString(), last.toString(), before.toISOString()])).rowCount ?? 0;
        return more ? { deleted, next: last } : { deleted };
      }),
    purgeDeliveries: (before) =>
      inBatches(0, async () => {
        const deleted = (await query(STATEMENTS.purgeDeliveries, [before.toISOString(), PRUNE_BATCH])).rowCount ?? 0;
        return deleted === PRUNE_BATCH ? { deleted, next: 0 } : { deleted };
      }),
  };
}
