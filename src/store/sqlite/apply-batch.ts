import type Database from 'better-sqlite3';
import { encodeOutcome, idempotencyKeyHash, judgeIdempotency, recordsFull, recordsOverCap } from '../../domain/idempotency.js';
import { updatedEvent, type NewEvent } from '../../domain/event.js';
import { judgeChange, type ChangeOutcome, type ChangeResult, type QuantityChange } from '../../domain/inventory.js';
import { appendsEvent } from '../appended.js';
import { changeLogWriter } from './change-log.js';
import { isTransient } from './connection.js';
import { entryReader } from './entries.js';

/** A change that failed, kept apart from the batch's other results. */
export interface ChangeFailure {
  error: { message: string; code?: string };
}

export type BatchResult = ChangeResult | ChangeFailure;

/**
 * The write side of the SQLite store's group commit: one IMMEDIATE transaction per batch. Per
 * change it reads the entry, writes the history row (chained to the pet's previous one) and the
 * entry; per batch it appends one event per applied change, bumps the store version and the events
 * head once and logs the pets it changed (what changesSince reads). Each statement is chosen for the pages and work it costs, since this runs
 * for every PATCH: no RETURNING (the new version is the one read + 1, under the write lock), no
 * index on history (rows are chained per pet), no savepoints unless a change fails.
 */
export function applyBatch(db: Database.Database, changes: readonly QuantityChange[], options: BatchOptions = {}): BatchResult[] {
  const omitEvents = options.omitEvents ?? false;
  const made = appliers[omitEvents ? 'withoutEvents' : 'withEvents'];
  let apply = made.get(db);
  if (!apply) made.set(db, (apply = applierOn(db, omitEvents)));
  return apply(changes);
}

/** How a batch is written. */
export interface BatchOptions {
  /** Append no events (the store's omitChangeEvents: only for the bench to measure what the log costs). */
  omitEvents?: boolean;
}

/** Writes a batch of changes in one IMMEDIATE transaction (one fsync); each result in the order given. */
type Applier = (changes: readonly QuantityChange[]) => BatchResult[];

/** Made at a connection's first batch (its statements), then reused by every batch on it. */
const appliers = { withEvents: new WeakMap<Database.Database, Applier>(), withoutEvents: new WeakMap<Database.Database, Applier>() };

function applierOn(db: Database.Database, omitEvents: boolean): Applier {
  const stmt = {
    // Reads the previous quantity and the pet's newest history row itself.
    insertHistory: db.prepare(
      `INSERT INTO inventory_history (pet_id, previous_quantity, quantity, at, key_id, key_name, request_id, reason, prev_id)
       SELECT pet_id, quantity, ?, ?, ?, ?, ?, ?, last_history_id FROM inventory WHERE pet_id = ?`,
    ),
    update: db.prepare('UPDATE inventory SET quantity = ?, version = version + 1, last_history_id = last_insert_rowid(), updated_at = ? WHERE pet_id = ?'),
    // Expired records too: reusing one takes no new row, so it never counts against the cap.
    findIdempotency: db.prepare('SELECT fingerprint, outcome, expires_at <= ? AS expired FROM idempotency_records WHERE api_key_id = ? AND key_hash = ?'),
    saveIdempotency: db.prepare(
      `INSERT INTO idempotency_records (api_key_id, key_hash, fingerprint, outcome, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (api_key_id, key_hash) DO UPDATE SET fingerprint = excluded.fingerprint, outcome = excluded.outcome,
         created_at = excluded.created_at, expires_at = excluded.expires_at`,
    ),
  };
  const overCap = overCapCheck(db);

  const entry = entryReader(db);
  const logWrite = changeLogWriter(db);
  // The quantity each applied change found, for its event; set only once the change's statements ran.
  let previous = new Map<QuantityChange, number>();

  const applyOne = (change: QuantityChange): ChangeResult => {
    const at = change.at.toISOString();
    const idem = change.idempotency;
    const keyHash = idem && idempotencyKeyHash(idem.key);
    if (idem) {
      const found = stmt.findIdempotency.get(at, change.keyId, keyHash) as { fingerprint: string; outcome: string | null; expired: number } | undefined;
      const verdict = judgeIdempotency(found && { ...found, expired: found.expired === 1 }, idem.fingerprint);
      if (verdict.kind === 'answer') return verdict.result;
      const full = verdict.kind === 'new' ? overCap(change.keyId, idem.recordsPerKey, change.at) : undefined;
      if (full) return full;
    }
    const verdict = judgeChange(entry(change.petId), change.condition);
    let outcome: ChangeOutcome;
    if (verdict.kind === 'apply') {
      stmt.insertHistory.run(change.quantity, at, change.keyId, change.keyName, change.requestId, change.reason, change.petId);
      stmt.update.run(change.quantity, at, change.petId);
      previous.set(change, verdict.current.item.quantity);
      outcome = { kind: 'updated', entry: { item: { ...verdict.current.item, quantity: change.quantity }, version: verdict.current.version + 1 } };
    } else {
      outcome = verdict;
    }
    if (idem) stmt.saveIdempotency.run(change.keyId, keyHash, idem.fingerprint, encodeOutcome(outcome), at, idem.expiresAt.toISOString());
    return { ...outcome, replayed: false };
  };

  /** Applies each change, then, if any changed an entry, its events, the store version and the change log: last, as in every write. */
  const applyAll = (changes: readonly QuantityChange[], each: (change: QuantityChange) => BatchResult): BatchResult[] => {
    previous = new Map();
    const results = changes.map(each);
    const events: NewEvent[] = [];
    const petIds: bigint[] = [];
    results.forEach((r, i) => {
      if (!appendsEvent(r)) return;
      petIds.push(changes[i]!.petId);
      if (!omitEvents) events.push(updatedEvent(changes[i]!, previous.get(changes[i]!)!, r.entry));
    });
    if (petIds.length > 0) logWrite(petIds, omitEvents ? 0 : events);
    return results;
  };
  // A nested better-sqlite3 transaction is a savepoint: a change that throws rolls back alone.
  const inSavepoint = db.transaction(applyOne);
  const alone = (change: QuantityChange): BatchResult => {
    try {
      return inSavepoint(change);
    } catch (err) {
      return failure(err);
    }
  };
  const together = db.transaction((changes: readonly QuantityChange[]) => applyAll(changes, applyOne));
  const oneByOne = db.transaction((changes: readonly QuantityChange[]) => applyAll(changes, alone));
  return (changes) => {
    try {
      return together.immediate(changes);
    } catch (err) {
      // The store itself failed (busy past the timeout, the disk): the whole batch fails, as it would one by one.
      if (isTransient(err)) throw err;
      // A change threw and the batch rolled back whole: again, each change in its own savepoint, so the bad one fails alone.
      return oneByOne.immediate(changes);
    }
  };
}

/**
 * Whether one more record takes an API key past its cap (domain recordsOverCap), read from its
 * count (idempotency_counts, kept by triggers), so a PATCH never counts rows. Expired records are
 * deleted first, as many as needed (the oldest), and only live ones refuse. Runs in the batch's
 * transaction, under SQLite's one write lock, so the count is exact across processes.
 */
function overCapCheck(db: Database.Database): (keyId: string, cap: number, now: Date) => ChangeResult | undefined {
  const count = db.prepare('SELECT records FROM idempotency_counts WHERE api_key_id = ?').pluck();
  const reclaim = db.prepare(
    `DELETE FROM idempotency_records WHERE rowid IN
       (SELECT rowid FROM idempotency_records WHERE api_key_id = ? AND expires_at <= ? ORDER BY expires_at LIMIT ?)`,
  );
  const oldestLive = db.prepare('SELECT min(expires_at) FROM idempotency_records WHERE api_key_id = ? AND expires_at > ?').pluck();
  return (keyId, cap, now) => {
    const over = recordsOverCap(Number(count.get(keyId) ?? 0), 1, cap);
    if (over === 0) return undefined;
    const at = now.toISOString();
    if (reclaim.run(keyId, at, over).changes >= over) return undefined;
    const oldest = oldestLive.get(keyId, at) as string | null;
    return recordsFull(oldest === null ? undefined : new Date(oldest), now);
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
