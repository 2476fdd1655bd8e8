import type { ChangeReason, InventoryItem } from '../schemas/inventory.js';

/** An entry with its version, which every change of its quantity increments (its ETag). */
export interface InventoryEntry {
  item: InventoryItem;
  version: number;
}

/** What retiring an entry did: retired (the entry as it was), no entry (none, or retired already), or refused while it holds stock. */
export type RetireOutcome = { kind: 'retired'; item: InventoryItem } | { kind: 'not_found' } | { kind: 'in_stock'; item: InventoryItem };

/** If-Match as a store condition: any existing entry (`*`), or one of these versions. */
export type VersionCondition = { anyVersion: true } | { anyVersion: false; versions: readonly number[] };

/** One change of an entry's quantity, as the store applies it. */
export interface QuantityChange {
  petId: bigint;
  quantity: number;
  /** From If-Match; undefined applies the change unconditionally. */
  condition?: VersionCondition | undefined;
  /** Who asked, for the history: the API key's id and name, never the key. */
  keyId: string;
  keyName: string;
  requestId: string;
  reason: ChangeReason | null;
  at: Date;
  /** From Idempotency-Key: the first outcome is kept per key id and idempotency key until `expiresAt`. */
  idempotency?: IdempotencyRequest | undefined;
}

/** An Idempotency-Key as a change carries it to the store, which keeps only the key's SHA-256. */
export interface IdempotencyRequest {
  /** The header's value; the store hashes it and never keeps it. */
  key: string;
  /** What makes a retry "the same request" (see requestFingerprint). */
  fingerprint: string;
  expiresAt: Date;
  /** Most live records the API key may hold: a change that needs one more is refused (idempotency_records_full). */
  recordsPerKey: number;
}

/** One API key's Idempotency-Key, as one string: a record is kept per such pair (keys of two API keys never meet). */
export function idempotencySlot(keyId: string, idempotencyKey: string): string {
  return `${keyId}\n${idempotencyKey}`;
}

/** What a change did; stored as-is for idempotent replays. */
export type ChangeOutcome =
  | { kind: 'updated'; entry: InventoryEntry }
  | { kind: 'not_found' }
  | { kind: 'precondition_failed'; entry: InventoryEntry };

/**
 * The outcome, `replayed` when it is the stored first outcome of the same idempotency key; or a
 * key reused with another request; or a new idempotency key refused because the API key already
 * holds `recordsPerKey` live records, until `retryAt` (when its oldest one expires). A refused
 * change wrote nothing.
 */
export type ChangeResult =
  | (ChangeOutcome & { replayed: boolean })
  | { kind: 'idempotency_key_reused' }
  | { kind: 'idempotency_records_full'; retryAt: Date };

/**
 * The If-Match judgement: what a change does to the entry it finds, inside its transaction. No
 * entry is not_found (before any precondition, RFC 9110 13.2.1), a condition that fails is
 * precondition_failed, anything else applies. SQLite calls it; PostgreSQL judges a whole batch in
 * one statement, and the store contract suite sends the same cases through both and this function.
 */
export function judgeChange(
  current: InventoryEntry | undefined,
  condition: VersionCondition | undefined,
): { kind: 'apply'; current: InventoryEntry } | Exclude<ChangeOutcome, { kind: 'updated' }> {
  if (!current) return { kind: 'not_found' };
  if (condition && !condition.anyVersion && !condition.versions.includes(current.version)) {
    return { kind: 'precondition_failed', entry: current };
  }
  return { kind: 'apply', current };
}

/** Where a new count comes from: a request (PATCH, the dashboard), or a stocktake (pets import --upsert). */
export type CountOrigin = 'request' | 'stocktake';

/**
 * The no-op rule: whether setting `quantity` on an entry that holds `current` is written as a
 * change (a history row and a new version). A request's always is, even to the count the entry
 * holds (decisions 5.4): the client asked for that count, and the new version tells it so. A
 * stocktake's only when the count differs (decisions 5.8): it restates every count, and one that
 * holds changed nothing. Both imports apply it in SQL over the staged rows; the store contract
 * suite holds every backend to this function.
 */
export function writesChange(origin: CountOrigin, current: number, quantity: number): boolean {
  return origin === 'request' || current !== quantity;
}

/** The strong ETag of an entry at `version` (RFC 9110 8.8.3). */
export function etagOf(version: number): string {
  return `"v${version}"`;
}

/** An entry's JSON: petId as its exact digits (never through a float), status from a closed enum (nothing to escape). */
export function itemJson(item: InventoryItem): string {
  return `{"petId":${item.petId},"quantity":${item.quantity},"status":"${item.status}"}`;
}
