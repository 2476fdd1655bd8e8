import type Database from 'better-sqlite3';
import type { ChangeResult, QuantityChange, RetireOutcome } from '../../domain/inventory.js';
import type { InventoryItem } from '../../schemas/inventory.js';
import type { GroupCommit } from '../group-commit.js';
import { DuplicatePetError, type Changes } from '../store.js';
import { changeLogWriter } from './change-log.js';
import { asUnavailable, type Run } from './connection.js';
import { entryReader } from './entries.js';
import { importItems } from './import.js';

/**
 * The SQLite store's writes of entries. Changes of quantity go through the group commit to the
 * writer thread (one IMMEDIATE transaction and one fsync per batch, apply-batch.ts), so the fsync
 * never stops the event loop; creations, retirements and imports are the operators' rare writes,
 * one IMMEDIATE transaction each on the event loop's connection, bumping the store version last.
 */
export function changes(db: Database.Database, run: Run, groupCommit: GroupCommit<QuantityChange, ChangeResult>): Changes {
  const insertItem = db.prepare(
    // A retired entry is revived (its version goes on, so no ETag repeats); an active one is left alone: no change, a duplicate.
    `INSERT INTO inventory (pet_id, quantity, status, created_at, updated_at) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT (pet_id) DO UPDATE SET quantity = excluded.quantity, status = excluded.status, retired_at = NULL,
       version = version + 1, updated_at = excluded.updated_at WHERE retired_at IS NOT NULL`,
  );
  const retire = db.prepare('UPDATE inventory SET retired_at = ?, updated_at = ? WHERE pet_id = ?');
  const entry = entryReader(db);
  const logWrite = changeLogWriter(db);
  const insertItems = db.transaction((items: readonly InventoryItem[], at: string) => {
    for (const item of items) {
      if (insertItem.run(item.petId, item.quantity, item.status, at, at).changes === 0) throw new DuplicatePetError(item.petId);
    }
    logWrite(items.map((i) => i.petId));
  });
  const retireEntry = db.transaction((petId: bigint, force: boolean, at: string): RetireOutcome => {
    const found = entry(petId);
    if (!found) return { kind: 'not_found' };
    if (found.item.quantity > 0 && !force) return { kind: 'in_stock', item: found.item };
    retire.run(at, at, petId);
    logWrite([petId]);
    return { kind: 'retired', item: found.item };
  });
  let importing = false;

  return {
    applyChange: (change) => groupCommit.submit(change),
    addItems: async (items) => void run(() => insertItems.immediate(items, new Date().toISOString())),
    retireEntry: async (petId, options) => run(() => retireEntry.immediate(petId, options.force, options.at.toISOString())),
    // On the event loop's connection: its staging table is a temporary one, private to the connection.
    async importItems(source, plan) {
      if (importing) throw new Error('an import is already running on this store');
      importing = true;
      try {
        return await run(() => importItems(db, source, plan));
      } catch (err) {
        throw asUnavailable(err);
      } finally {
        importing = false;
      }
    },
  };
}
