import type Database from 'better-sqlite3';
import { inBatches, oldPrefix, PRUNE_BATCH } from '../pruning.js';
import type { Maintenance } from '../store.js';
import { briefly, durabilityOf, LIMIT, type Run } from './connection.js';
import type { ChangeWriter } from './writer.js';

/** The SQLite store's durability, readiness and pruning; pruning gives way to the writer thread (briefly) rather than block the loop. */
export function maintenance(db: Database.Database, run: Run, writer: ChangeWriter, options: { inThread: boolean }): Maintenance {
  const stmt = {
    ping: db.prepare('SELECT 1').pluck(),
    idempotencyHolders: db.prepare('SELECT api_key_id FROM idempotency_counts WHERE records > 0 ORDER BY api_key_id').pluck(),
    purgeIdempotency: db.prepare(
      `DELETE FROM idempotency_records WHERE rowid IN (SELECT rowid FROM idempotency_records WHERE api_key_id = ? AND expires_at <= ? LIMIT ${LIMIT})`,
    ),
    // Rows in id order, which is commit order: the oldest first.
    historyHead: db.prepare(`SELECT id, at FROM inventory_history WHERE id > ? ORDER BY id LIMIT ${LIMIT}`).raw(true).safeIntegers(true),
    // Each entry's newest row stays: it links the entry's next change (last_history_id), and as the
    // table's newest row is always one, a new row never takes the id of a deleted one.
    pruneHistory: db.prepare(
      `DELETE FROM inventory_history WHERE id > ? AND id <= ? AND at < ?
         AND NOT EXISTS (SELECT 1 FROM inventory i WHERE i.pet_id = inventory_history.pet_id AND i.last_history_id = inventory_history.id)`,
    ),
    purgeDeliveries: db.prepare<[string, number]>(
      `DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM webhook_deliveries WHERE attempted_at < ? LIMIT ${LIMIT})`,
    ),
  };
  const pruneStep = db.transaction((after: bigint, cutoff: string) => {
    const head = stmt.historyHead.all(after, PRUNE_BATCH) as [id: bigint, at: string][];
    const { last, more } = oldPrefix(head, (at) => at < cutoff);
    if (last === undefined) return { deleted: 0 };
    const deleted = stmt.pruneHistory.run(after, last, cutoff).changes;
    return more ? { deleted, next: last } : { deleted };
  });

  return {
    async durability() {
      const main = run(() => durabilityOf(db));
      // A private :memory: database commits on the main connection.
      if (options.inThread) return [{ connection: 'main', settings: main }];
      return [
        { connection: 'main', settings: main },
        { connection: 'writer thread', settings: await writer.durability() },
      ];
    },
    async ping() {
      run(() => stmt.ping.get());
      // Reads alone are not ready: without its writer thread the store cannot commit a change.
      const failure = writer.failure();
      if (failure) throw failure;
    },
    async purgeIdempotencyRecords(now) {
      const at = now.toISOString();
      let total = 0;
      for (const keyId of run(() => stmt.idempotencyHolders.all() as string[])) {
        total += await inBatches(keyId, async () => {
          const deleted = run(() => briefly(db, () => stmt.purgeIdempotency.run(keyId, at, PRUNE_BATCH).changes));
          return deleted === PRUNE_BATCH ? { deleted, next: keyId } : { deleted };
        });
      }
      return total;
    },
    async purgeHistory(before) {
      const cutoff = before.toISOString();
      return inBatches(0n, async (after) => run(() => briefly(db, () => pruneStep.immediate(after, cutoff))));
    },
    async purgeDeliveries(before) {
      const cutoff = before.toISOString();
      return inBatches(0, async () => {
        const deleted = run(() => briefly(db, () => stmt.purgeDeliveries.run(cutoff, PRUNE_BATCH).changes));
        return deleted === PRUNE_BATCH ? { deleted, next: 0 } : { deleted };
      });
    },
  };
}
