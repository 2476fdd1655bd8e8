import type Database from 'better-sqlite3';
import { judgeChange, type ChangeOutcome, type ChangeResult, type InventoryEntry, type QuantityChange } from '../../domain/inventory.js';
import type { PetStatus } from '../../schemas/inventory.js';
import { decodeOutcome, encodeOutcome } from '../outcome.js';

/** A change that failed, kept apart from the batch's other results. */
export interface ChangeFailure {
  error: { message: string; code?: string };
}

export type BatchResult = ChangeResult | ChangeFailure;

/** Writes a batch of changes in one IMMEDIATE transaction (one fsync); each result in the order given. */
export type ApplyBatch = (batch: readonly QuantityChange[]) => BatchResult[];

type EntryRow = [petId: bigint, quantity: bigint, status: string, version: bigint];

/**
 * The write side of the SQLite store's group commit. Each change runs in its own savepoint,
 * so one that fails (a CHECK, say) fails alone; the store version is bumped once per batch
 * that changed something.
 */
export function changeApplier(db: Database.Database): ApplyBatch {
  const stmt = {
    update: db.prepare('UPDATE inventory SET quantity = ?, version = version + 1, change_seq = ? , updated_at = ? WHERE pet_id = ? RETURNING version').pluck(),
    insertHistory: db.prepare(
      `INSERT INTO inventory_history (pet_id, previous_quantity, quantity, at, key_id, key_name, request_id, reason)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    readVersion: db.prepare('SELECT version FROM store_state WHERE id = 1').pluck(),
    setVersion: db.prepare('UPDATE store_state SET version = ? WHERE id = 1'),
    findIdempotency: db.prepare('SELECT fingerprint, outcome FROM idempotency_records WHERE api_key_id = ? AND idem_key = ? AND expires_at > ?'),
    saveIdempotency: db.prepare(
      `INSERT INTO idempotency_records (api_key_id, idem_key, fingerprint, outcome, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (api_key_id, idem_key) DO UPDATE SET fingerprint = excluded.fingerprint, outcome = excluded.outcome,
         created_at = excluded.created_at, expires_at = excluded.expires_at`,
    ),
  };

  const entry = entryReader(db);

  const applyOne = (change: QuantityChange, seq: number): ChangeResult => {
    const at = change.at.toISOString();
    const idem = change.idempotency;
    if (idem) {
      const found = stmt.findIdempotency.get(change.keyId, idem.key, at) as { fingerprint: string; outcome: string | null } | undefined;
      if (found) {
        if (found.fingerprint !== idem.fingerprint) return { kind: 'idempotency_key_reused' };
        if (found.outcome !== null) return { ...decodeOutcome(found.outcome), replayed: true };
      }
    }
    const verdict = judgeChange(entry(change.petId), change.condition);
    let outcome: ChangeOutcome;
    if (verdict.kind === 'apply') {
      const version = stmt.update.get(change.quantity, seq, at, change.petId) as number;
      const previous = verdict.current.item.quantity;
      stmt.insertHistory.run(change.petId, previous, change.quantity, at, change.keyId, change.keyName, change.requestId, change.reason);
      outcome = { kind: 'updated', entry: { item: { ...verdict.current.item, quantity: change.quantity }, version } };
    } else {
      outcome = verdict;
    }
    if (idem) stmt.saveIdempotency.run(change.keyId, idem.key, idem.fingerprint, encodeOutcome(outcome), at, idem.expiresAt.toISOString());
    return { ...outcome, replayed: false };
  };

  // A nested better-sqlite3 transaction is a savepoint: a change that throws rolls back alone.
  const inSavepoint = db.transaction(applyOne);
  const batch = db.transaction((changes: readonly QuantityChange[]): BatchResult[] => {
    const seq = Number(stmt.readVersion.get()) + 1;
    const results = changes.map((change): BatchResult => {
      try {
        return inSavepoint(change, seq);
      } catch (err) {
        return failure(err);
      }
    });
    if (results.some((r) => 'kind' in r && r.kind === 'updated' && !r.replayed)) stmt.setVersion.run(seq);
    return results;
  });
  return (changes) => batch.immediate(changes);
}

/** One entry with its version, by petId: the read both the store and the batch applier use. */
export function entryReader(db: Database.Database): (petId: bigint) => InventoryEntry | undefined {
  const get = db.prepare('SELECT pet_id, quantity, status, version FROM inventory WHERE pet_id = ?').raw(true).safeIntegers(true);
  return (petId) => {
    const row = get.get(petId) as EntryRow | undefined;
    return row && { item: { petId: row[0], quantity: Number(row[1]), status: row[2] as PetStatus }, version: Number(row[3]) };
  };
}

export function failure(err: unknown): ChangeFailure {
  const code = (err as { code?: unknown }).code;
  return { error: { message: err instanceof Error ? err.message : String(err), ...(typeof code === 'string' ? { code } : {}) } };
}

/** A failure as an Error with its SQLite code (for the 503 mapping). */
export function errorOf({ error }: ChangeFailure): Error {
  return Object.assign(new Error(error.message), error.code === undefined ? {} : { code: error.code });
}
