import type { ApiKeyRecord } from '../domain/api-key.js';
import type { ChangeReason, InventoryItem } from '../schemas/inventory.js';

/**
 * The one storage interface. Every backend (src/store/<backend>.ts) implements it and the
 * contract suite (test/store.contract.test.ts) runs against each. A resolved write is durable.
 * Failures to reach the store reject with StoreUnavailableError (answered as 503).
 */
export interface InventoryStore {
  /** Backend name, for logs and readiness. */
  readonly backend: 'sqlite' | 'postgres';

  /** Every entry, ordered by petId ascending. */
  listInventory(): Promise<InventoryItem[]>;
  /** One entry with its version, or undefined when petId has none. */
  getEntry(petId: bigint): Promise<InventoryEntry | undefined>;
  /**
   * Sets the quantity of an existing entry (status never changes) if its condition holds, writing
   * the history row and the idempotency record in the same transaction. Changes that arrive
   * together may share one commit; each resolves only once its own is durable.
   */
  applyChange(change: QuantityChange): Promise<ChangeResult>;
  /** Creates entries, all or nothing; rejects with DuplicatePetError if any petId already has one. */
  addItems(items: readonly InventoryItem[]): Promise<void>;
  /** The history of one entry, newest first, `limit` rows older than the `before` row id; undefined when petId has no entry. */
  listHistory(petId: bigint, page: { limit: number; before?: bigint }): Promise<HistoryEntry[] | undefined>;
  /** Drops idempotency records that expired before `now`; resolves to how many. */
  purgeIdempotencyRecords(now: Date): Promise<number>;

  /** The store version: increases with every committed creation or change of an entry, in commit order. */
  readVersion(): Promise<number>;
  /** Entries created or changed after store version `after` (-1: all), by petId, and the version they are current at. */
  changesSince(after: number): Promise<{ version: number; items: InventoryItem[] }>;

  /** Stores a new API key record. */
  insertApiKey(record: ApiKeyRecord): Promise<void>;
  /** Stores the record only while the store holds no key at all, atomically across processes (first run); false when a key exists. */
  insertFirstApiKey(record: ApiKeyRecord): Promise<boolean>;
  /** The key record with this SHA-256 hash, whether usable or not. */
  findApiKeyByHash(keyHash: string): Promise<ApiKeyRecord | undefined>;
  /** Every key record, oldest first. */
  listApiKeys(): Promise<ApiKeyRecord[]>;
  /** Marks a key revoked; false when no key has this id or it was already revoked. */
  revokeApiKey(id: string, at: Date): Promise<boolean>;
  /** Records that a key was used at this time. */
  touchApiKey(id: string, at: Date): Promise<void>;

  /** Resolves when the store answers a trivial query. */
  ping(): Promise<void>;
  /** Releases the store; further calls reject with StoreUnavailableError. */
  close(): Promise<void>;
}

/** addItems was given a petId that already has an entry. */
export class DuplicatePetError extends Error {
  constructor(readonly petId: bigint) {
    super(`pet ${petId} already has an inventory entry`);
    this.name = 'DuplicatePetError';
  }
}

/** An entry with its version, which every change increments (the ETag). */
export interface InventoryEntry {
  item: InventoryItem;
  version: number;
}

/** If-Match as a store condition: any existing entry (`*`), or one of these versions. */
export type VersionCondition = { anyVersion: true } | { anyVersion: false; versions: readonly number[] };

/** One PATCH as the store applies it. */
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
  idempotency?: { key: string; fingerprint: string; expiresAt: Date } | undefined;
}

/** What a change did; stored as-is for idempotent replays. */
export type ChangeOutcome =
  | { kind: 'updated'; entry: InventoryEntry }
  | { kind: 'not_found' }
  | { kind: 'precondition_failed'; entry: InventoryEntry };

/** The outcome, `replayed` when it is the stored first outcome of the same idempotency key; or a key reused with another request. */
export type ChangeResult = (ChangeOutcome & { replayed: boolean }) | { kind: 'idempotency_key_reused' };

/** One row of an entry's change history. */
export interface HistoryEntry {
  /** Row id: increases with every change of the entry (the pagination cursor). */
  id: bigint;
  petId: bigint;
  previousQuantity: number;
  quantity: number;
  at: Date;
  keyId: string;
  keyName: string;
  requestId: string;
  reason: ChangeReason | null;
}
