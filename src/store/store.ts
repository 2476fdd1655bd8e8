import type { ApiKeyRecord } from '../domain/api-key.js';
import type { HistoryEntry } from '../domain/history.js';
import type { ImportOutcome, ImportPlan, ImportSource } from '../domain/import.js';
import type { ChangeResult, InventoryEntry, QuantityChange, RetireOutcome } from '../domain/inventory.js';
import type { InventoryItem } from '../schemas/inventory.js';

/**
 * The one storage interface. Every backend (src/store/<backend>/) implements it and the contract
 * suite (test/store.contract.test.ts) runs against each. A resolved write is durable: it survives
 * the process being killed the next instant, and by default a power loss. Failures to reach the
 * store reject with StoreUnavailableError (answered as 503).
 *
 * Every write of an entry follows the same rules, in one transaction:
 * - a change of quantity writes its history row (creating an entry is not a change and writes none,
 *   nor does retiring one or reviving a retired one);
 * - a retired entry (retireEntry) is kept with its history but is no entry to anything else: lists,
 *   getEntry and changes of quantity pass it by, and changesSince reports it removed;
 * - the store version is bumped last, so store versions commit in order and changesSince
 *   never misses a committed write, from any process or instance;
 * - a change with an idempotency key writes the key's record with the outcome, keyed by the key's
 *   SHA-256 (the key itself is never stored), unless the API key already holds
 *   `recordsPerKey` live records: then the change is refused and writes nothing.
 * Changes of quantity go through the one group commit (src/store/group-commit.ts); a backend
 * supplies only how a batch is applied.
 */
export interface InventoryStore {
  /** Backend name, for logs and readiness. */
  readonly backend: 'sqlite' | 'postgres';

  /** Every entry, ordered by petId ascending. */
  listInventory(): Promise<InventoryItem[]>;
  /**
   * One page of the list: at most `limit` entries with a petId above `after` (from the first when
   * undefined), by petId ascending. Page after page, each from the last petId of the one before,
   * reads the whole list without holding it; each page is one consistent read.
   */
  listInventoryPage(after: bigint | undefined, limit: number): Promise<InventoryItem[]>;
  /** One entry with its version, or undefined when petId has none. */
  getEntry(petId: bigint): Promise<InventoryEntry | undefined>;
  /**
   * Sets the quantity of an existing entry (status never changes) if its condition holds, writing
   * the history row and the idempotency record in the same transaction. Changes that arrive
   * together share one commit; each resolves only once its own is durable.
   */
  applyChange(change: QuantityChange): Promise<ChangeResult>;
  /**
   * Creates entries, all or nothing; rejects with DuplicatePetError if any petId already has one. A
   * retired petId is revived: it takes the new quantity and status, its version and history go on.
   */
  addItems(items: readonly InventoryItem[]): Promise<void>;
  /**
   * Retires an entry the store no longer stocks (see the rules above); refuses one whose quantity is
   * above 0 (in_stock) unless `force`. A durable write: it bumps the store version.
   */
  retireEntry(petId: bigint, options: { force: boolean; at: Date }): Promise<RetireOutcome>;
  /**
   * Imports entries all or nothing. Each batch is staged as it arrives, in a transaction (or a COPY)
   * of its own, so memory holds one batch whatever the size of the file; then the staged rows are
   * checked as a whole (a petId twice; an entry that exists, or with `upsert` one whose status
   * differs) and applied in one transaction, by the rules above: each change of quantity an upsert
   * makes writes its history row (reason correction), a retired entry is revived, the store version
   * is bumped last. Applies nothing when anything is refused, by the store or by the reader.
   */
  importItems(source: ImportSource, plan: ImportPlan): Promise<ImportOutcome>;
  /**
   * The history of one entry, newest first: `limit` rows, older than `before` when given (the id
   * of one of this entry's rows, as the last row of a page has it; any other id gives no rows).
   * Undefined when petId has no entry.
   */
  listHistory(petId: bigint, page: { limit: number; before?: bigint }): Promise<HistoryEntry[] | undefined>;
  /** Drops idempotency records that expired before `now`, in short transactions; resolves to how many. */
  purgeIdempotencyRecords(now: Date): Promise<number>;
  /**
   * Drops history rows older than `before`, oldest first, in short transactions, except each
   * entry's newest row (the last change of its count stays visible). Stops at the first row that
   * is not old, so a pruned page cursor has no older rows left. Resolves to how many.
   */
  purgeHistory(before: Date): Promise<number>;

  /** The store version: increases with every committed creation or change of an entry, in commit order. */
  readVersion(): Promise<number>;
  /** What changed in the entries after store version `after` (-1: everything), and the version the answer is current at. */
  changesSince(after: number): Promise<EntryChanges>;

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

  /** The settings that make a write durable, for each connection that writes (the server logs them at start). */
  durability(): Promise<ConnectionDurability[]>;
  /** Resolves when the store answers a trivial query and can commit. */
  ping(): Promise<void>;
  /** Commits the changes already accepted, then releases the store; further calls reject with StoreUnavailableError. */
  close(): Promise<void>;
}

/** The answer of changesSince. */
export interface EntryChanges {
  /** The store version the answer is current at. */
  version: number;
  /** Entries created, changed or revived since, by petId; every entry when `complete`. */
  items: InventoryItem[];
  /** Entries retired since, by petId; empty when `complete`. */
  removed: bigint[];
  /** `items` is the whole list (asked from -1, or the store cannot tell what changed): the reader replaces what it holds. */
  complete: boolean;
}

/** One writing connection (or pool) and its durability settings as the database reports them, e.g. { synchronous: 'full' }. */
export interface ConnectionDurability {
  connection: string;
  settings: Record<string, string>;
}

/** addItems was given a petId that already has an entry. */
export class DuplicatePetError extends Error {
  constructor(readonly petId: bigint) {
    super(`pet ${petId} already has an inventory entry`);
    this.name = 'DuplicatePetError';
  }
}

