import type Database from 'better-sqlite3';
import type { ApiKeyRecord, Environment, Scope } from '../../domain/api-key.js';
import type { HistoryEntry } from '../../domain/history.js';
import type { ImportOutcome, ImportPlan, ImportSource } from '../../domain/import.js';
import type { ChangeResult, InventoryEntry, QuantityChange, RetireOutcome } from '../../domain/inventory.js';
import { StoreUnavailableError } from '../../errors.js';
import type { ChangeReason, InventoryItem, PetStatus } from '../../schemas/inventory.js';
import { changeGroupCommit, type GroupCommit } from '../group-commit.js';
import { HOUSEKEEPING_BATCH, inBatches, oldPrefix } from '../housekeeping.js';
import { DuplicatePetError, type ConnectionDurability, type EntryChanges, type InventoryStore } from '../store.js';
import { entryReader, errorOf, type BatchResult } from './apply-batch.js';
import { changeLogReader, changeLogWriter } from './change-log.js';
import { sqliteImporter } from './import.js';
import { BUSY_TIMEOUT_MS, durabilityOf, isTransient, openSqliteConnection } from './connection.js';
import { migrate } from './migrations.js';
import { inThreadWriter, threadWriter, type ChangeWriter } from './writer.js';

type ItemRow = [petId: bigint, quantity: bigint, status: string];
/** A row the change log names: retired is 1 for an entry retired since. */
type ChangedRow = [...ItemRow, retired: number];
type HistoryRow = [id: bigint, petId: bigint, previous: bigint, quantity: bigint, at: string, keyId: string, keyName: string, requestId: string, reason: string | null];

/** How long a housekeeping write on the event loop's connection waits for the write lock (see #briefly). */
export const MAINTENANCE_BUSY_TIMEOUT_MS = 100;

interface KeyRow {
  id: string;
  name: string;
  environment: string;
  key_hash: string;
  hint: string;
  scopes: string;
  created_at: string;
  last_used_at: string | null;
  expires_at: string | null;
  revoked_at: string | null;
}

/**
 * Opens (creating if needed) the SQLite store at `filename` (":memory:" for a private in-memory
 * database), applies pending migrations and prepares every statement once.
 */
/** `timeoutMs` (STORE_TIMEOUT_MS): the longest a change waits for its batch to commit, a batch in flight before it included (503 past it). */
export function openSqliteStore(filename: string, options: { timeoutMs?: number } = {}): InventoryStore {
  const db = openSqliteConnection(filename);
  try {
    migrate(db);
  } catch (err) {
    db.close();
    throw err;
  }
  // A private :memory: database exists only on this connection, so it cannot have a writer thread.
  return new SqliteStore(db, filename, filename === ':memory:' ? inThreadWriter(db) : threadWriter(filename), options.timeoutMs);
}

class SqliteStore implements InventoryStore {
  readonly backend = 'sqlite' as const;
  readonly #db: Database.Database;
  readonly #filename: string;
  readonly #stmt;
  readonly #insertItems;
  readonly #retire;
  readonly #changesSince;
  readonly #writer: ChangeWriter;
  readonly #logWrite: ReturnType<typeof changeLogWriter>;
  /** Made at the first import: its staging table and statements. */
  #importer: ReturnType<typeof sqliteImporter> | undefined;
  #importing = false;
  readonly #entry: (petId: bigint) => InventoryEntry | undefined;
  /** Changes of quantity, committed in groups by the writer. */
  readonly #changes: GroupCommit<QuantityChange, ChangeResult>;
  #closing: Promise<void> | undefined;

  constructor(db: Database.Database, filename: string, writer: ChangeWriter, timeoutMs: number | undefined) {
    this.#db = db;
    this.#filename = filename;
    this.#writer = writer;
    this.#entry = entryReader(db);
    this.#changes = changeGroupCommit(async (batch) => {
      let results: BatchResult[];
      try {
        results = await this.#writer.apply(batch);
      } catch (err) {
        throw asUnavailable(err);
      }
      return results.map((result) => ('error' in result ? asUnavailable(errorOf(result)) : result));
    }, { timeoutMs });
    const safe = (sql: string) => db.prepare(sql).raw(true).safeIntegers(true);
    this.#stmt = {
      list: safe('SELECT pet_id, quantity, status FROM inventory WHERE retired_at IS NULL ORDER BY pet_id'),
      // Keyset pages: a range of the primary key, however deep into the list.
      firstPage: safe('SELECT pet_id, quantity, status FROM inventory WHERE retired_at IS NULL ORDER BY pet_id LIMIT ?'),
      nextPage: safe('SELECT pet_id, quantity, status FROM inventory WHERE pet_id > ? AND retired_at IS NULL ORDER BY pet_id LIMIT ?'),
      // A retired entry is revived (its version goes on, so no ETag repeats); an active one is left alone: no change, a duplicate.
      insertItem: db.prepare(
        `INSERT INTO inventory (pet_id, quantity, status, created_at, updated_at) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (pet_id) DO UPDATE SET quantity = excluded.quantity, status = excluded.status, retired_at = NULL,
           version = version + 1, updated_at = excluded.updated_at WHERE retired_at IS NOT NULL`,
      ),
      retire: db.prepare('UPDATE inventory SET retired_at = ?, updated_at = ? WHERE pet_id = ?'),
      readVersion: db.prepare('SELECT version FROM store_state WHERE id = 1').pluck(),
      // Newest first, following each row's link to the pet's previous one, from the row before `before` (or the newest).
      history: safe(
        `WITH RECURSIVE walk(id, n) AS (
           SELECT CASE WHEN :before IS NULL THEN (SELECT last_history_id FROM inventory WHERE pet_id = :pet)
                       ELSE (SELECT prev_id FROM inventory_history WHERE id = :before AND pet_id = :pet) END, 1
           UNION ALL
           SELECT h.prev_id, walk.n + 1 FROM walk JOIN inventory_history h ON h.id = walk.id WHERE walk.n < :limit AND h.prev_id IS NOT NULL
         )
         SELECT h.id, h.pet_id, h.previous_quantity, h.quantity, h.at, h.key_id, h.key_name, h.request_id, h.reason
         FROM walk JOIN inventory_history h ON h.id = walk.id ORDER BY walk.n`,
      ),
      hasEntry: db.prepare('SELECT 1 FROM inventory WHERE pet_id = ?').pluck(),
      idempotencyHolders: db.prepare('SELECT api_key_id FROM idempotency_counts WHERE records > 0 ORDER BY api_key_id').pluck(),
      purgeIdempotency: db.prepare(
        'DELETE FROM idempotency_records WHERE rowid IN (SELECT rowid FROM idempotency_records WHERE api_key_id = ? AND expires_at <= ? LIMIT ?)',
      ),
      // Rows in id order, which is commit order: the oldest first.
      historyHead: db.prepare('SELECT id, at FROM inventory_history WHERE id > ? ORDER BY id LIMIT ?').raw(true).safeIntegers(true),
      // Each entry's newest row stays: it links the entry's next change (last_history_id), and as the
      // table's newest row is always one, a new row never takes the id of a deleted one.
      pruneHistory: db.prepare(
        `DELETE FROM inventory_history WHERE id > ? AND id <= ? AND at < ?
           AND NOT EXISTS (SELECT 1 FROM inventory i WHERE i.pet_id = inventory_history.pet_id AND i.last_history_id = inventory_history.id)`,
      ),
      insertKey: db.prepare(
        `INSERT INTO api_keys (id, name, environment, key_hash, hint, scopes, created_at, last_used_at, expires_at, revoked_at)
         VALUES (@id, @name, @environment, @key_hash, @hint, @scopes, @created_at, @last_used_at, @expires_at, @revoked_at)`,
      ),
      insertFirstKey: db.prepare(
        `INSERT INTO api_keys (id, name, environment, key_hash, hint, scopes, created_at, last_used_at, expires_at, revoked_at)
         SELECT @id, @name, @environment, @key_hash, @hint, @scopes, @created_at, @last_used_at, @expires_at, @revoked_at
         WHERE NOT EXISTS (SELECT 1 FROM api_keys)`,
      ),
      keyByHash: db.prepare('SELECT * FROM api_keys WHERE key_hash = ?'),
      listKeys: db.prepare('SELECT * FROM api_keys ORDER BY created_at, id'),
      revokeKey: db.prepare('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL'),
      touchKey: db.prepare('UPDATE api_keys SET last_used_at = ? WHERE id = ?'),
      ping: db.prepare('SELECT 1').pluck(),
    };
    const logWrite = changeLogWriter(db);
    this.#logWrite = logWrite;
    this.#insertItems = db.transaction((items: readonly InventoryItem[], at: string) => {
      for (const item of items) {
        const { changes } = this.#stmt.insertItem.run(item.petId, item.quantity, item.status, at, at);
        if (changes === 0) throw new DuplicatePetError(item.petId);
      }
      logWrite(items.map((i) => i.petId));
    });
    this.#retire = db.transaction((petId: bigint, force: boolean, at: string): RetireOutcome => {
      const entry = this.#entry(petId);
      if (!entry) return { kind: 'not_found' };
      if (entry.item.quantity > 0 && !force) return { kind: 'in_stock', item: entry.item };
      this.#stmt.retire.run(at, at, petId);
      logWrite([petId]);
      return { kind: 'retired', item: entry.item };
    });
    const changedSince = changeLogReader(db, 'pet_id, quantity, status, retired_at IS NOT NULL');
    // One read transaction: the version and the entries come from one snapshot.
    this.#changesSince = db.transaction((after: number): EntryChanges => {
      const version = Number(this.#stmt.readVersion.get());
      if (version === after) return { version, items: [], removed: [], complete: false };
      const changed = after < 0 ? undefined : (changedSince(after) as ChangedRow[] | undefined);
      if (!changed) return { version, items: (this.#stmt.list.all() as ItemRow[]).map(toItem), removed: [], complete: true };
      const items: InventoryItem[] = [];
      const removed: bigint[] = [];
      for (const row of changed) {
        if (row[3]) removed.push(row[0]);
        else items.push(toItem([row[0], row[1], row[2]]));
      }
      return { version, items, removed, complete: false };
    });
  }

  async listInventory(): Promise<InventoryItem[]> {
    return this.#run(() => (this.#stmt.list.all() as ItemRow[]).map(toItem));
  }

  async listInventoryPage(after: bigint | undefined, limit: number): Promise<InventoryItem[]> {
    return this.#run(() => {
      const rows = after === undefined ? this.#stmt.firstPage.all(limit) : this.#stmt.nextPage.all(after, limit);
      return (rows as ItemRow[]).map(toItem);
    });
  }

  async getEntry(petId: bigint): Promise<InventoryEntry | undefined> {
    return this.#run(() => this.#entry(petId));
  }

  /**
   * The batch is one IMMEDIATE transaction, one fsync, in the writer thread, so the fsync does
   * not stop the event loop; a change that fails fails alone (apply-batch.ts).
   */
  applyChange(change: QuantityChange): Promise<ChangeResult> {
    return this.#changes.submit(change);
  }

  async addItems(items: readonly InventoryItem[]): Promise<void> {
    this.#run(() => this.#insertItems.immediate(items, new Date().toISOString()));
  }

  /** On the event loop's connection, as addItems: one IMMEDIATE transaction that bumps the store version last. */
  async retireEntry(petId: bigint, options: { force: boolean; at: Date }): Promise<RetireOutcome> {
    return this.#run(() => this.#retire.immediate(petId, options.force, options.at.toISOString()));
  }

  /** On the event loop's connection: its staging table is a temporary one, private to the connection. */
  async importItems(source: ImportSource, plan: ImportPlan): Promise<ImportOutcome> {
    if (this.#importing) throw new Error('an import is already running on this store');
    this.#importer ??= this.#run(() => sqliteImporter(this.#db, this.#logWrite));
    this.#importing = true;
    try {
      return await this.#importer(source, plan);
    } catch (err) {
      throw asUnavailable(err);
    } finally {
      this.#importing = false;
    }
  }

  async listHistory(petId: bigint, page: { limit: number; before?: bigint }): Promise<HistoryEntry[] | undefined> {
    return this.#run(() => {
      if (this.#stmt.hasEntry.get(petId) === undefined) return undefined;
      const rows = this.#stmt.history.all({ pet: petId, before: page.before ?? null, limit: page.limit }) as HistoryRow[];
      return rows.map(toHistoryEntry);
    });
  }

  async purgeIdempotencyRecords(now: Date): Promise<number> {
    const at = now.toISOString();
    let total = 0;
    for (const keyId of this.#run(() => this.#stmt.idempotencyHolders.all() as string[])) {
      total += await inBatches(keyId, async () => {
        const deleted = this.#run(() => this.#briefly(() => this.#stmt.purgeIdempotency.run(keyId, at, HOUSEKEEPING_BATCH).changes));
        return deleted === HOUSEKEEPING_BATCH ? { deleted, next: keyId } : { deleted };
      });
    }
    return total;
  }

  async purgeHistory(before: Date): Promise<number> {
    const cutoff = before.toISOString();
    return inBatches(0n, async (after) =>
      this.#run(() =>
        this.#briefly(() =>
          this.#db.transaction(() => {
            const head = this.#stmt.historyHead.all(after, HOUSEKEEPING_BATCH) as [id: bigint, at: string][];
            const { last, more } = oldPrefix(head, (at) => at < cutoff);
            if (last === undefined) return { deleted: 0 };
            const deleted = this.#stmt.pruneHistory.run(after, last, cutoff).changes;
            return more ? { deleted, next: last } : { deleted };
          }).immediate(),
        ),
      ),
    );
  }

  async readVersion(): Promise<number> {
    return this.#run(() => Number(this.#stmt.readVersion.get()));
  }

  async changesSince(after: number): Promise<EntryChanges> {
    return this.#run(() => {
      // Most calls find nothing new: one row answers those, without a transaction.
      const version = Number(this.#stmt.readVersion.get());
      return version === after ? { version, items: [], removed: [], complete: false } : this.#changesSince.deferred(after);
    });
  }

  async insertApiKey(record: ApiKeyRecord): Promise<void> {
    this.#run(() => this.#stmt.insertKey.run(toKeyRow(record)));
  }

  async insertFirstApiKey(record: ApiKeyRecord): Promise<boolean> {
    // IMMEDIATE: the write lock is taken before the check, so two processes cannot both see no key.
    return this.#run(() => this.#db.transaction(() => this.#stmt.insertFirstKey.run(toKeyRow(record)).changes === 1).immediate());
  }

  async findApiKeyByHash(keyHash: string): Promise<ApiKeyRecord | undefined> {
    return this.#run(() => {
      const row = this.#stmt.keyByHash.get(keyHash) as KeyRow | undefined;
      return row && toKeyRecord(row);
    });
  }

  async listApiKeys(): Promise<ApiKeyRecord[]> {
    return this.#run(() => (this.#stmt.listKeys.all() as KeyRow[]).map(toKeyRecord));
  }

  async revokeApiKey(id: string, at: Date): Promise<boolean> {
    return this.#run(() => this.#stmt.revokeKey.run(at.toISOString(), id).changes === 1);
  }

  async touchApiKey(id: string, at: Date): Promise<void> {
    this.#run(() => this.#briefly(() => this.#stmt.touchKey.run(at.toISOString(), id)));
  }

  /**
   * A housekeeping write on this (the event loop's) connection, waiting at most
   * MAINTENANCE_BUSY_TIMEOUT_MS for the writer thread's lock: the wait blocks the loop, and
   * these writes can fail (logged) and happen again later.
   */
  #briefly<T>(write: () => T): T {
    this.#db.exec(`PRAGMA busy_timeout = ${MAINTENANCE_BUSY_TIMEOUT_MS}`);
    try {
      return write();
    } finally {
      this.#db.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
    }
  }

  async durability(): Promise<ConnectionDurability[]> {
    const main = this.#run(() => durabilityOf(this.#db));
    // A private :memory: database commits on the main connection.
    if (this.#filename === ':memory:') return [{ connection: 'main', settings: main }];
    return [
      { connection: 'main', settings: main },
      { connection: 'writer thread', settings: await this.#writer.durability() },
    ];
  }

  async ping(): Promise<void> {
    this.#run(() => this.#stmt.ping.get());
    // Reads alone are not ready: without its writer thread the store cannot commit a change.
    const failure = this.#writer.failure();
    if (failure) throw failure;
  }

  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    if (!this.#db.open) return;
    await this.#changes.close();
    await this.#writer.close();
    this.#db.close();
  }

  /** Runs a synchronous driver call, turning "cannot reach the store now" into StoreUnavailableError. */
  #run<T>(fn: () => T): T {
    if (!this.#db.open) throw new StoreUnavailableError('the SQLite store is closed');
    try {
      return fn();
    } catch (err) {
      throw asUnavailable(err);
    }
  }
}


function asUnavailable<E>(err: E): E | StoreUnavailableError {
  return isTransient(err) ? new StoreUnavailableError('the SQLite store is busy or unavailable', { cause: err }) : err;
}

function toHistoryEntry(row: HistoryRow): HistoryEntry {
  return {
    id: row[0],
    petId: row[1],
    previousQuantity: Number(row[2]),
    quantity: Number(row[3]),
    at: new Date(row[4]),
    keyId: row[5],
    keyName: row[6],
    requestId: row[7],
    reason: row[8] as ChangeReason | null,
  };
}

function toItem(row: ItemRow): InventoryItem {
  return { petId: row[0], quantity: Number(row[1]), status: row[2] as PetStatus };
}

function toKeyRow(r: ApiKeyRecord): KeyRow {
  return {
    id: r.id,
    name: r.name,
    environment: r.environment,
    key_hash: r.keyHash,
    hint: r.hint,
    scopes: r.scopes.join(' '),
    created_at: r.createdAt.toISOString(),
    last_used_at: r.lastUsedAt?.toISOString() ?? null,
    expires_at: r.expiresAt?.toISOString() ?? null,
    revoked_at: r.revokedAt?.toISOString() ?? null,
  };
}

function toKeyRecord(row: KeyRow): ApiKeyRecord {
  const date = (s: string | null) => (s === null ? null : new Date(s));
  return {
    id: row.id,
    name: row.name,
    environment: row.environment as Environment,
    keyHash: row.key_hash,
    hint: row.hint,
    scopes: row.scopes.split(' ').filter(Boolean) as Scope[],
    createdAt: new Date(row.created_at),
    lastUsedAt: date(row.last_used_at),
    expiresAt: date(row.expires_at),
    revokedAt: date(row.revoked_at),
  };
}
