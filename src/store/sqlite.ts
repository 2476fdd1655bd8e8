import type Database from 'better-sqlite3';
import type { ApiKeyRecord, Environment, Scope } from '../domain/api-key.js';
import { StoreUnavailableError } from '../errors.js';
import type { ChangeReason, InventoryItem, PetStatus } from '../schemas/inventory.js';
import { SQLITE_MIGRATIONS } from './migrations/sqlite.js';
import { BUSY_TIMEOUT_MS, openSqliteConnection } from './sqlite-connection.js';
import { entryReader, errorOf } from './sqlite-changes.js';
import { inThreadWriter, threadWriter, type ChangeWriter } from './sqlite-change-writer.js';
import { DuplicatePetError, type ChangeResult, type HistoryEntry, type InventoryEntry, type InventoryStore, type QuantityChange } from './store.js';

type ItemRow = [petId: bigint, quantity: bigint, status: string];
type HistoryRow = [id: bigint, petId: bigint, previous: bigint, quantity: bigint, at: string, keyId: string, keyName: string, requestId: string, reason: string | null];

/** How long a housekeeping write on the event loop's connection waits for the write lock (see #briefly). */
export const MAINTENANCE_BUSY_TIMEOUT_MS = 100;

/** A change waiting for the next group commit. */
interface Pending {
  change: QuantityChange;
  resolve: (result: ChangeResult) => void;
  reject: (err: unknown) => void;
}

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
export function openSqliteStore(filename: string): InventoryStore {
  const db = openSqliteConnection(filename);
  try {
    migrate(db);
  } catch (err) {
    db.close();
    throw err;
  }
  // A private :memory: database exists only on this connection, so it cannot have a writer thread.
  return new SqliteStore(db, filename === ':memory:' ? inThreadWriter(db) : threadWriter(filename));
}

function migrate(db: Database.Database): void {
  db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL) STRICT');
  // IMMEDIATE takes the write lock first, so processes starting together migrate one at a time.
  db.transaction(() => {
    const applied = new Set(
      db.prepare('SELECT version FROM schema_migrations').pluck().all() as number[],
    );
    const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
    for (const m of SQLITE_MIGRATIONS) {
      if (applied.has(m.version)) continue;
      db.exec(m.sql);
      record.run(m.version, m.name, new Date().toISOString());
    }
  }).immediate();
}

class SqliteStore implements InventoryStore {
  readonly backend = 'sqlite' as const;
  readonly #db: Database.Database;
  readonly #stmt;
  readonly #insertItems;
  readonly #writer: ChangeWriter;
  readonly #entry: (petId: bigint) => InventoryEntry | undefined;
  /** Changes gathering for the next group commit. */
  #pending: Pending[] = [];
  /** The group commit under way, if any. */
  #writing: Promise<void> | undefined;
  #closing: Promise<void> | undefined;

  constructor(db: Database.Database, writer: ChangeWriter) {
    this.#db = db;
    this.#writer = writer;
    this.#entry = entryReader(db);
    const safe = (sql: string) => db.prepare(sql).raw(true).safeIntegers(true);
    this.#stmt = {
      list: safe('SELECT pet_id, quantity, status FROM inventory ORDER BY pet_id'),
      insertItem: db.prepare(
        'INSERT INTO inventory (pet_id, quantity, status, created_at, updated_at, change_seq) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (pet_id) DO NOTHING',
      ),
      readVersion: db.prepare('SELECT version FROM store_state WHERE id = 1').pluck(),
      setVersion: db.prepare('UPDATE store_state SET version = ? WHERE id = 1'),
      // One statement is one snapshot, so the version and the rows agree; the version comes first (k = 0).
      changesSince: safe(
        `SELECT 0 AS k, version, NULL AS pet_id, NULL AS quantity, NULL AS status FROM store_state WHERE id = 1
         UNION ALL SELECT 1, NULL, pet_id, quantity, status FROM inventory WHERE change_seq > ? ORDER BY k, pet_id`,
      ),
      history: safe(
        `SELECT id, pet_id, previous_quantity, quantity, at, key_id, key_name, request_id, reason FROM inventory_history
         WHERE pet_id = ? AND id < ? ORDER BY id DESC LIMIT ?`,
      ),
      hasEntry: db.prepare('SELECT 1 FROM inventory WHERE pet_id = ?').pluck(),
      purgeIdempotency: db.prepare('DELETE FROM idempotency_records WHERE expires_at <= ?'),
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
    this.#insertItems = db.transaction((items: readonly InventoryItem[], at: string) => {
      const seq = Number(this.#stmt.readVersion.get()) + 1;
      for (const item of items) {
        const { changes } = this.#stmt.insertItem.run(item.petId, item.quantity, item.status, at, at, seq);
        if (changes === 0) throw new DuplicatePetError(item.petId);
      }
      this.#stmt.setVersion.run(seq);
    });
  }

  async listInventory(): Promise<InventoryItem[]> {
    return this.#run(() => (this.#stmt.list.all() as ItemRow[]).map(toItem));
  }

  async getEntry(petId: bigint): Promise<InventoryEntry | undefined> {
    return this.#run(() => this.#entry(petId));
  }

  /**
   * Group commit: one batch commits (in the writer thread, so the fsync does not stop the event
   * loop) while the next gathers; a batch is one transaction and one fsync. Each change runs in
   * its own savepoint, in arrival order, so one that fails fails alone, and each is answered
   * once its own batch has committed.
   */
  applyChange(change: QuantityChange): Promise<ChangeResult> {
    if (this.#closing || !this.#db.open) return Promise.reject(new StoreUnavailableError('the SQLite store is closed'));
    return new Promise((resolve, reject) => {
      // The first change of a batch waits one turn of the event loop for the changes that arrive with it.
      if (this.#pending.push({ change, resolve, reject }) === 1 && !this.#writing) setImmediate(() => this.#flush());
    });
  }

  async addItems(items: readonly InventoryItem[]): Promise<void> {
    this.#run(() => this.#insertItems.immediate(items, new Date().toISOString()));
  }

  async listHistory(petId: bigint, page: { limit: number; before?: bigint }): Promise<HistoryEntry[] | undefined> {
    return this.#run(() => {
      if (this.#stmt.hasEntry.get(petId) === undefined) return undefined;
      const rows = this.#stmt.history.all(petId, page.before ?? INT64_MAX_ID, page.limit) as HistoryRow[];
      return rows.map(toHistoryEntry);
    });
  }

  async purgeIdempotencyRecords(now: Date): Promise<number> {
    return this.#run(() => this.#briefly(() => this.#stmt.purgeIdempotency.run(now.toISOString()).changes));
  }

  async readVersion(): Promise<number> {
    return this.#run(() => Number(this.#stmt.readVersion.get()));
  }

  async changesSince(after: number): Promise<{ version: number; items: InventoryItem[] }> {
    return this.#run(() => {
      // Most calls find nothing new: one indexed row answers those.
      const version = Number(this.#stmt.readVersion.get());
      if (version === after) return { version, items: [] };
      const [head, ...rows] = this.#stmt.changesSince.all(after) as [k: bigint, version: bigint | null, ...item: ItemRow][];
      return { version: Number(head![1]), items: rows.map(([, , ...item]) => toItem(item)) };
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
    this.#db.pragma(`busy_timeout = ${MAINTENANCE_BUSY_TIMEOUT_MS}`);
    try {
      return write();
    } finally {
      this.#db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    }
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
    // Changes already accepted are committed before the database closes.
    while (this.#writing || this.#pending.length > 0) {
      this.#flush();
      await this.#writing;
    }
    await this.#writer.close();
    this.#db.close();
  }

  #flush(): void {
    if (this.#writing || this.#pending.length === 0) return;
    const batch = this.#pending;
    this.#pending = [];
    this.#writing = this.#writer
      .apply(batch.map((p) => p.change))
      .then(
        (results) =>
          results.forEach((result, i) => {
            if ('error' in result) batch[i]!.reject(asUnavailable(errorOf(result)));
            else batch[i]!.resolve(result);
          }),
        (err: unknown) => {
          for (const p of batch) p.reject(asUnavailable(err));
        },
      )
      // Settling a promise cannot throw; this only keeps a bug from becoming an unhandled rejection.
      .catch(() => {})
      .finally(() => {
        this.#writing = undefined;
        this.#flush();
      });
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

/** Above every history row id, for the first page. */
const INT64_MAX_ID = 2n ** 63n - 1n;

function asUnavailable(err: unknown): unknown {
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

/** Lock contention past the busy timeout, or the disk failing: worth a retry, not a 500. */
function isTransient(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  return (
    typeof code === 'string' &&
    /^SQLITE_(BUSY|LOCKED|IOERR|FULL|CANTOPEN|READONLY|PROTOCOL)/.test(code)
  );
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
