import type Database from 'better-sqlite3';
import { requireEachPetOnce, type ChangeBatch, type ChangeBatchResult, type ChangeResult, type QuantityChange, type RetireOutcome } from '../../domain/inventory.js';
import type { WriteFacts } from '../../domain/write-kinds.js';
import type { InventoryItem } from '../../schemas/inventory.js';
import type { GroupCommit } from '../group-commit.js';
import type { AppendedSignal } from '../appended.js';
import { DuplicatePetError, type Changes } from '../store.js';
import { changeLog } from './change-log.js';
import { asUnavailable, type Run } from './connection.js';
import { entryReader } from './entries.js';
import { importItems } from './import.js';

/**
 * The SQLite store's writes of entries. Changes of quantity go through the group commit to the
 * writer thread (one IMMEDIATE transaction and one fsync per batch, apply-batch.ts), so the fsync
 * never stops the event loop; creations, retirements and imports are the operators' rare writes,
 * one IMMEDIATE transaction each on the event loop's connection, appending their events and bumping
 * the store version last. A ChangeBatch goes to the writer thread too, one at a time through
 * `batches` (a transaction of its own each, apply-change-batch.ts). Listeners of onAppended are
 * told after each commit that appended.
 */
export function changes(
  db: Database.Database,
  run: Run,
  writes: { groupCommit: GroupCommit<QuantityChange, ChangeResult>; batches: GroupCommit<ChangeBatch, ChangeBatchResult> },
  appended: AppendedSignal,
): Changes {
  const { groupCommit, batches } = writes;
  const insertItem = db.prepare(
    // A retired entry is revived (its version goes on, so no ETag repeats); an active one is left alone: no change, no row, a duplicate.
    `INSERT INTO inventory (pet_id, quantity, status, created_at, updated_at) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT (pet_id) DO UPDATE SET quantity = excluded.quantity, status = excluded.status, retired_at = NULL,
       version = version + 1, updated_at = excluded.updated_at WHERE retired_at IS NOT NULL
     RETURNING version`,
  ).pluck();
  // A retirement is a new version of the entry (decisions 5.9): its event is newer than the entry's last change.
  const retire = db.prepare('UPDATE inventory SET retired_at = ?, updated_at = ?, version = version + 1 WHERE pet_id = ?');
  const entry = entryReader(db);
  const log = changeLog(db);
  const insertItems = db.transaction((items: readonly InventoryItem[], at: Date) => {
    const iso = at.toISOString();
    const created = items.map(({ petId, quantity, status }): WriteFacts => {
      const version = insertItem.get(petId, quantity, status, iso, iso) as number | undefined;
      if (version === undefined) throw new DuplicatePetError(petId);
      return { petId, status, before: null, after: quantity, version: Number(version), at };
    });
    log.wrote('created', created);
  });
  const retireEntry = db.transaction((petId: bigint, force: boolean, at: Date): RetireOutcome => {
    const found = entry(petId);
    if (!found) return { kind: 'not_found' };
    const { item, version } = found;
    if (item.quantity > 0 && !force) return { kind: 'in_stock', item };
    retire.run(at.toISOString(), at.toISOString(), petId);
    log.wrote('deleted', [{ petId, status: item.status, before: item.quantity, after: item.quantity, version: version + 1, at }]);
    return { kind: 'retired', item };
  });
  let importing = false;

  return {
    applyChange: (change) => groupCommit.submit(change),
    async applyBatch(batch) {
      // Before the queue: a caller's mistake, not the store's, so it never takes the writer's turn.
      requireEachPetOnce(batch);
      return batches.submit(batch);
    },
    async addItems(items) {
      run(() => insertItems.immediate(items, new Date()));
      if (items.length > 0) appended.emit();
    },
    async retireEntry(petId, options) {
      const outcome = run(() => retireEntry.immediate(petId, options.force, options.at));
      if (outcome.kind === 'retired') appended.emit();
      return outcome;
    },
    // On the event loop's connection: its staging table is a temporary one, private to the connection.
    async importItems(source, plan) {
      if (importing) throw new Error('an import is already running on this store');
      importing = true;
      try {
        const outcome = await run(() => importItems(db, source, plan));
        if (outcome.applied && outcome.created + outcome.updated > 0) appended.emit();
        return outcome;
      } catch (err) {
        throw asUnavailable(err);
      } finally {
        importing = false;
      }
    },
  };
}
