import type Database from 'better-sqlite3';
import { encodeOutcome, idempotencyKeyHash, judgeIdempotency, refusePastCap } from '../../domain/idempotency.js';
import { judgeChange, type ChangeResult, type QuantityChange } from '../../domain/inventory.js';
import { appendsEvent } from '../appended.js';
import { changeStatements } from './change-statements.js';
import { isTransient } from './connection.js';

/** A change that failed, kept apart from the batch's other results. */
export interface ChangeFailure {
  error: { message: string; code?: string };
}

export type BatchResult = ChangeResult | ChangeFailure;

/**
 * The write side of the SQLite store's group commit: one IMMEDIATE transaction per batch. Per
 * change it reads the entry, writes the history row (chained to the pet's previous one) and the
 * entry; per batch it appends one event per applied change (one statement, from their rows), bumps
 * the store version and the events head once and logs the pets it changed (what changesSince
 * reads). Each statement is chosen for the pages and work it costs, since this runs for every
 * PATCH: no RETURNING (the new version is the one read + 1, under the write lock), no index on
 * history (rows are chained per pet), no savepoints unless a change fails.
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
  const write = changeStatements(db);

  const applyOne = (change: QuantityChange): ChangeResult => {
    const idem = change.idempotency;
    const keyHash = idem && idempotencyKeyHash(idem.key);
    if (idem) {
      const verdict = judgeIdempotency(write.findRecord(change.keyId, keyHash!, change.at), idem.fingerprint);
      if (verdict.kind === 'answer') return verdict.result;
      const full = verdict.kind === 'new' ? refusePastCap(write.recordsCap(change.keyId, change.at), 1, idem.recordsPerKey, change.at) : undefined;
      if (full) return full.result;
    }
    // A delta moves the count read here, under the write lock: no other change can come between.
    const verdict = judgeChange(write.entry(change.petId), change);
    let result: ChangeResult;
    if (verdict.kind === 'apply') {
      // Built whole, not spread from the outcome: this runs for every PATCH.
      result = { kind: 'updated', entry: write.apply(change, verdict), replayed: false };
    } else {
      result = { ...verdict, replayed: false };
    }
    if (idem) write.saveRecord(change.keyId, keyHash!, idem, encodeOutcome(result), change.at);
    return result;
  };

  /** Applies each change, then, if any changed an entry, their events, the store version and the change log: last, as in every write. */
  const applyAll = (changes: readonly QuantityChange[], each: (change: QuantityChange) => BatchResult): BatchResult[] => {
    const results = changes.map(each);
    const applied: QuantityChange[] = [];
    results.forEach((r, i) => {
      if (appendsEvent(r)) applied.push(changes[i]!);
    });
    write.recordApplied(applied, omitEvents);
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

export function failure(err: unknown): ChangeFailure {
  const code = (err as { code?: unknown }).code;
  return { error: { message: err instanceof Error ? err.message : String(err), ...(typeof code === 'string' ? { code } : {}) } };
}

/** A failure as an Error with its SQLite code (for the 503 mapping). */
export function errorOf({ error }: ChangeFailure): Error {
  return Object.assign(new Error(error.message), error.code === undefined ? {} : { code: error.code });
}
