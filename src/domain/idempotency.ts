import { hash } from 'node:crypto';
import type { PetStatus } from '../schemas/inventory.js';
import type { BatchOutcome, ChangeBatchResult, ChangeOutcome, ChangeRefusal, ChangeResult, InventoryEntry } from './inventory.js';

/**
 * The rules of an Idempotency-Key that every backend follows inside the transaction of a change
 * (decisions 5.6 and 7.2). A backend only finds the records and the counts; what they mean is
 * decided here, once.
 */

/** Hex SHA-256 of an Idempotency-Key: what the store keeps instead of the key (a client may put anything in it). */
export function idempotencyKeyHash(key: string): string {
  return hash('sha256', key, 'hex');
}

/** The record of one API key's Idempotency-Key, as a backend finds it. */
export interface IdempotencyRecord {
  /** What the first request was (see requestFingerprint). */
  fingerprint: string;
  /** Its encoded outcome (encodeOutcome); null in a record an earlier version claimed before its change ran. */
  outcome: string | null;
  /** Past its expiry: the key is free again. */
  expired: boolean;
}

/**
 * What a change with an Idempotency-Key does, given the key's record:
 * - `new`: no record; applying writes one, a new row that counts against the API key's cap;
 * - `rewrite`: the record is expired, or holds no outcome; the key is free again, so the change
 *   applies and the record is written over in place (no new row: nothing against the cap);
 * - `answer`: the record is live; its outcome is replayed, or, for another request, the key is
 *   refused as reused. Nothing is written.
 * A record without an outcome cannot be written today (a record and its outcome commit together).
 * One left by an earlier version is a claim whose request never answered: no client was told an
 * outcome, so the change is applied, once, and its outcome kept.
 */
export type IdempotencyVerdict<R = ChangeResult> = { kind: 'new' } | { kind: 'rewrite' } | { kind: 'answer'; result: R | { kind: 'idempotency_key_reused' } };

/**
 * `replay` turns a stored outcome into the answer replayed: a change's by default, a batch's
 * (replayBatchOutcome) for a batch. A key's fingerprint names the operation, so a record is only
 * ever replayed by the operation that stored it.
 */
export function judgeIdempotency<R = ChangeResult>(
  record: IdempotencyRecord | undefined,
  fingerprint: string,
  replay: (outcome: string) => R = replayOutcome as (outcome: string) => R,
): IdempotencyVerdict<R> {
  if (!record) return { kind: 'new' };
  if (record.expired) return { kind: 'rewrite' };
  if (record.fingerprint !== fingerprint) return { kind: 'answer', result: { kind: 'idempotency_key_reused' } };
  if (record.outcome === null) return { kind: 'rewrite' };
  return { kind: 'answer', result: replay(record.outcome) };
}

/** A change's stored outcome, replayed. */
function replayOutcome(text: string): ChangeResult {
  return { ...decodeOutcome(text), replayed: true };
}

/** A batch's stored outcome, replayed. */
export function replayBatchOutcome(text: string): ChangeBatchResult {
  return { ...decodeBatchOutcome(text), replayed: true };
}

/** How many records an API key holding `held` (live or expired) is over its cap once `fresh` new ones are added (refusePastCap). */
export function recordsOverCap(held: number, fresh: number, cap: number): number {
  return Math.max(0, held + fresh - cap);
}

/** A new key refused for its API key's cap, for a change or a batch alike. */
export type RecordsFull = Extract<ChangeResult, { kind: 'idempotency_records_full' }>;

/** The refusal of a new key past the cap: retry when the API key's oldest live record expires (undefined: none is live, so at once). */
export function recordsFull(oldestLive: Date | undefined, now: Date): RecordsFull {
  return { kind: 'idempotency_records_full', retryAt: oldestLive ?? now };
}

/** A port's answer: a value where the backend answers in its transaction at once (SQLite), a promise where it waits (PostgreSQL). */
export type Answer<T, Async extends boolean> = Async extends true ? Promise<T> : T;

/**
 * What the cap needs of a backend about one API key's records, inside the transaction that
 * writes them, with the key's count locked (so it stays exact across processes).
 */
export interface RecordsCap<Async extends boolean> {
  /** How many records the API key holds, live or expired. */
  held(): Answer<number, Async>;
  /** Deletes up to `count` of its expired records, oldest first (none the write reuses); how many it deleted. */
  reclaimExpired(count: number): Answer<number, Async>;
  /** When its oldest live record expires; undefined when none is live. */
  oldestLive(): Answer<Date | undefined, Async>;
}

/** How many of a write's new keys the cap refuses (the last ones), and the refusal each gets. */
export interface CapRefusal {
  refused: number;
  result: RecordsFull;
}

/**
 * The per-key cap (decisions 7.2) for `fresh` new records of one API key, at `now`: past the cap,
 * its expired records are deleted, oldest first, as many as needed; what that cannot make room
 * for is refused, to retry when its oldest live record expires. Undefined when all fit. Returns
 * what `cap` returns: a value from a synchronous port, a promise from an asynchronous one.
 */
export function refusePastCap<Async extends boolean>(cap: RecordsCap<Async>, fresh: number, limit: number, now: Date): Answer<CapRefusal | undefined, Async> {
  return then(cap.held(), (held) => {
    const over = recordsOverCap(held, fresh, limit);
    if (over === 0) return undefined;
    return then(cap.reclaimExpired(over), (reclaimed) => {
      if (reclaimed >= over) return undefined;
      return then(cap.oldestLive(), (oldest) => ({ refused: over - reclaimed, result: recordsFull(oldest, now) }));
    });
  }) as Answer<CapRefusal | undefined, Async>;
}

/** `next` of a port's answer: at once for a value, once it settles for a promise, so one sequence serves both kinds of port. */
function then<T, U>(answer: T | Promise<T>, next: (value: T) => U | Promise<U>): U | Promise<U> {
  return answer instanceof Promise ? answer.then(next) : next(answer);
}

interface StoredEntry {
  petId: string;
  quantity: number;
  status: PetStatus;
  version: number;
  /** What reservations held (decisions 12.2); absent in records kept before reservations, and where none held anything. */
  reserved?: number;
}

interface StoredOutcome {
  kind: ChangeOutcome['kind'];
  entry?: StoredEntry;
}

type StoredBatchOutcome = { kind: 'applied'; entries: StoredEntry[] } | { kind: 'refused'; index: number; outcome: StoredOutcome };

/** An outcome as stored for idempotent replays: JSON with the petId as a string, so every int64 survives. */
export function encodeOutcome(outcome: ChangeOutcome): string {
  return JSON.stringify(storedOutcome(outcome));
}

export function decodeOutcome(text: string): ChangeOutcome {
  return outcomeOf(JSON.parse(text) as StoredOutcome);
}

/** A batch's outcome as stored for idempotent replays, each entry as encodeOutcome keeps one. */
export function encodeBatchOutcome(outcome: BatchOutcome): string {
  const stored: StoredBatchOutcome =
    outcome.kind === 'applied'
      ? { kind: 'applied', entries: outcome.entries.map(storedEntry) }
      : { kind: 'refused', index: outcome.index, outcome: storedOutcome(outcome.outcome) };
  return JSON.stringify(stored);
}

export function decodeBatchOutcome(text: string): BatchOutcome {
  const stored = JSON.parse(text) as StoredBatchOutcome;
  if (stored.kind === 'applied') return { kind: 'applied', entries: stored.entries.map(entryOf) };
  return { kind: 'refused', index: stored.index, outcome: outcomeOf(stored.outcome) as ChangeRefusal };
}

function storedOutcome(outcome: ChangeOutcome): StoredOutcome {
  return outcome.kind === 'not_found' ? { kind: outcome.kind } : { kind: outcome.kind, entry: storedEntry(outcome.entry) };
}

function outcomeOf(stored: StoredOutcome): ChangeOutcome {
  if (stored.kind === 'not_found' || !stored.entry) return { kind: 'not_found' };
  return { kind: stored.kind, entry: entryOf(stored.entry) };
}

function storedEntry({ item, version }: InventoryEntry): StoredEntry {
  const stored: StoredEntry = { petId: item.petId.toString(), quantity: item.quantity, status: item.status, version };
  if (item.reserved) stored.reserved = item.reserved;
  return stored;
}

function entryOf({ petId, quantity, status, version, reserved }: StoredEntry): InventoryEntry {
  return { item: reserved ? { petId: BigInt(petId), quantity, status, reserved } : { petId: BigInt(petId), quantity, status }, version };
}
