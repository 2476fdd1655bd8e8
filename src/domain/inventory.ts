import type { ChangeReason, InventoryItem } from '../schemas/inventory.js';
import type { EventSource } from './event.js';
import { QUANTITY_MAX, QUANTITY_MIN } from '../schemas/values.js';

/** An entry with its version, which every change of its quantity increments (its ETag). */
export interface InventoryEntry {
  item: InventoryItem;
  version: number;
}

/** What retiring an entry did: retired (the entry as it was), no entry (none, or retired already), or refused while it holds stock. */
export type RetireOutcome = { kind: 'retired'; item: InventoryItem } | { kind: 'not_found' } | { kind: 'in_stock'; item: InventoryItem };

/** If-Match as a store condition: any existing entry (`*`), or one of these versions. */
export type VersionCondition = { anyVersion: true } | { anyVersion: false; versions: readonly number[] };

/**
 * What a change does to an entry's count: sets it (PATCH, a batch's `quantity`), or moves it by a
 * non-zero `delta` from the count the store holds when the change applies, inside its transaction
 * (an adjustment: a sale is -1 whatever the count is, so concurrent sales never lose one).
 */
export type CountChange = { quantity: number; delta?: undefined } | { delta: number; quantity?: undefined };

/** Who made a change and when, as the history and the event log keep it. */
export interface ChangeOrigin {
  /** A request to the API, or the operator's CLI (pets adjust): its event says so, and carries the key and request ids only for the API's (decisions 5.9). */
  source: EventSource;
  /** Who asked, for the history: the API key's id and name, never the key. */
  keyId: string;
  keyName: string;
  requestId: string;
  at: Date;
  /** From Idempotency-Key: the first outcome is kept per key id and idempotency key until `expiresAt`. */
  idempotency?: IdempotencyRequest | undefined;
}

/** One change of one entry's count: which entry, what it does, and under which If-Match. */
export type EntryChange = CountChange & {
  petId: bigint;
  /** From If-Match; undefined applies the change unconditionally. */
  condition?: VersionCondition | undefined;
  reason: ChangeReason | null;
};

/** One change of an entry's quantity, as the store applies it (PATCH, an adjustment). */
export type QuantityChange = EntryChange & ChangeOrigin;

/**
 * Several changes applied all or nothing, in one transaction (POST /v1/inventory/batch): each pet
 * at most once (the caller refuses a repeated petId before the store), one origin and one
 * idempotency key for the whole.
 */
export type ChangeBatch = ChangeOrigin & { changes: readonly EntryChange[] };

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
  | { kind: 'precondition_failed'; entry: InventoryEntry }
  /** A delta that would take the count below 0; `entry` holds the count on hand. */
  | { kind: 'insufficient_stock'; entry: InventoryEntry }
  /** A delta that would take the count above QUANTITY_MAX. */
  | { kind: 'quantity_out_of_range'; entry: InventoryEntry };

/** A change's outcome that changed nothing. */
export type ChangeRefusal = Exclude<ChangeOutcome, { kind: 'updated' }>;

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
 * The judgement of one change on the entry it finds, inside its transaction: no entry is
 * not_found (before any precondition, RFC 9110 13.2.1); an If-Match condition that fails is
 * precondition_failed (the client's premise is wrong, whatever the count); a delta that would take
 * the count below 0, or a negative one below what reservations hold (decisions 12.3), is
 * insufficient_stock, above QUANTITY_MAX quantity_out_of_range; anything else
 * applies, with the count it sets. SQLite calls it; PostgreSQL judges a whole batch in one
 * statement that mirrors it and calls it for each change that statement did not apply, and the
 * store contract suite sends the same cases through both and this function.
 */
export function judgeChange(
  current: InventoryEntry | undefined,
  change: CountChange & { condition?: VersionCondition | undefined },
): { kind: 'apply'; current: InventoryEntry; quantity: number } | ChangeRefusal {
  if (!current) return { kind: 'not_found' };
  const { condition } = change;
  if (condition && !condition.anyVersion && !condition.versions.includes(current.version)) {
    return { kind: 'precondition_failed', entry: current };
  }
  const quantity = change.delta === undefined ? change.quantity : current.item.quantity + change.delta;
  if (quantity < QUANTITY_MIN) return { kind: 'insufficient_stock', entry: current };
  // A sale may not take what reservations hold (decisions 12.3); a count always applies: it is what is on the shelf.
  if (change.delta !== undefined && change.delta < 0 && quantity < (current.item.reserved ?? 0)) return { kind: 'insufficient_stock', entry: current };
  if (quantity > QUANTITY_MAX) return { kind: 'quantity_out_of_range', entry: current };
  return { kind: 'apply', current, quantity };
}

/**
 * What a batch did: every change applied, each entry as it left it, in the order given; or none,
 * refused for the first change (by `index`) that could not apply.
 */
export type BatchOutcome = { kind: 'applied'; entries: InventoryEntry[] } | { kind: 'refused'; index: number; outcome: ChangeRefusal };

/** A batch's outcome, `replayed` for its Idempotency-Key's stored one; or the key refused, as for one change (ChangeResult). */
export type ChangeBatchResult =
  | (BatchOutcome & { replayed: boolean })
  | { kind: 'idempotency_key_reused' }
  | { kind: 'idempotency_records_full'; retryAt: Date };

/** The first change of a batch, by index, that repeats an earlier one's petId, or -1: a batch changes each pet at most once. */
export function repeatedPet(changes: readonly { petId: bigint }[]): number {
  const seen = new Set<bigint>();
  return changes.findIndex(({ petId }) => seen.size === seen.add(petId).size);
}

/** Throws when a ChangeBatch changes a pet twice: the caller's mistake (the API refuses it as 400 before), so the store writes nothing. */
export function requireEachPetOnce(batch: ChangeBatch): void {
  const repeated = repeatedPet(batch.changes);
  if (repeated >= 0) throw new Error(`changes[${repeated}] repeats the petId of an earlier change: a batch changes each pet once`);
}

/** The strong ETag of an entry at `version` (RFC 9110 8.8.3). */
export function etagOf(version: number): string {
  return `"v${version}"`;
}

/** An entry's JSON as the API answers it: petId as its exact digits (never through a float), status from a closed enum (nothing to escape), what is held and available. */
export function itemJson(item: InventoryItem): string {
  const reserved = item.reserved ?? 0;
  return `{"petId":${item.petId},"quantity":${item.quantity},"status":"${item.status}","reserved":${reserved},"available":${availableOf(item)}}`;
}

/** What an entry has for anyone but its reservations: never below 0, as a count may fall below what is held (decisions 12.3). */
export function availableOf(item: Pick<InventoryItem, 'quantity' | 'reserved'>): number {
  return Math.max(0, item.quantity - (item.reserved ?? 0));
}
