import type { ApiKeyRecord } from '../domain/api-key.js';
import type { InventoryItem } from '../schemas/inventory.js';

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
  /** One entry, or undefined when petId has none. */
  getItem(petId: bigint): Promise<InventoryItem | undefined>;
  /** Sets the quantity of an existing entry; undefined when petId has no entry. Status never changes. */
  setQuantity(petId: bigint, quantity: number): Promise<InventoryItem | undefined>;
  /** Creates entries, all or nothing; rejects with DuplicatePetError if any petId already has one. */
  addItems(items: readonly InventoryItem[]): Promise<void>;

  /** Stores a new API key record. */
  insertApiKey(record: ApiKeyRecord): Promise<void>;
  /** The key record with this SHA-256 hash, whether usable or not. */
  findApiKeyByHash(keyHash: string): Promise<ApiKeyRecord | undefined>;
  /** Every key record, oldest first. */
  listApiKeys(): Promise<ApiKeyRecord[]>;
  /** Marks a key revoked; false when no key has this id or it was already revoked. */
  revokeApiKey(id: string, at: Date): Promise<boolean>;
  /** Records that a key was used at this time. */
  touchApiKey(id: string, at: Date): Promise<void>;
  /** How many keys exist, revoked or not (first run creates one when there are none). */
  countApiKeys(): Promise<number>;

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
