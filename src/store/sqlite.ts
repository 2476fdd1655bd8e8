import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import type { ApiKeyRecord, Environment, Scope } from '../domain/api-key.js';
import { StoreUnavailableError } from '../errors.js';
import type { InventoryItem, PetStatus } from '../schemas/inventory.js';
import { SQLITE_MIGRATIONS } from './migrations/sqlite.js';
import { DuplicatePetError, type InventoryStore } from './store.js';

/** How long a writer waits for another process's lock before the request fails with 503. */
const BUSY_TIMEOUT_MS = 5000;

type ItemRow = [petId: bigint, quantity: bigint, status: string];

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
  if (filename !== ':memory:') mkdirSync(dirname(filename), { recursive: true });
  const db = new Database(filename);
  try {
    db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    db.pragma('journal_mode = WAL');
    // FULL: a commit is fsynced before it returns, so a 2xx survives a power loss (PD 5.2).
    db.pragma('synchronous = FULL');
    db.pragma('foreign_keys = ON');
    migrate(db);
  } catch (err) {
    db.close();
    throw err;
  }
  return new SqliteStore(db);
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

  constructor(db: Database.Database) {
    this.#db = db;
    this.#stmt = {
      list: db.prepare('SELECT pet_id, quantity, status FROM inventory ORDER BY pet_id').raw(true).safeIntegers(true),
      get: db.prepare('SELECT pet_id, quantity, status FROM inventory WHERE pet_id = ?').raw(true).safeIntegers(true),
      setQuantity: db
        .prepare('UPDATE inventory SET quantity = ?, updated_at = ? WHERE pet_id = ? RETURNING pet_id, quantity, status')
        .raw(true)
        .safeIntegers(true),
      insertItem: db.prepare(
        'INSERT INTO inventory (pet_id, quantity, status, created_at, updated_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (pet_id) DO NOTHING',
      ),
      insertKey: db.prepare(
        `INSERT INTO api_keys (id, name, environment, key_hash, hint, scopes, created_at, last_used_at, expires_at, revoked_at)
         VALUES (@id, @name, @environment, @key_hash, @hint, @scopes, @created_at, @last_used_at, @expires_at, @revoked_at)`,
      ),
      keyByHash: db.prepare('SELECT * FROM api_keys WHERE key_hash = ?'),
      listKeys: db.prepare('SELECT * FROM api_keys ORDER BY created_at, id'),
      revokeKey: db.prepare('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL'),
      touchKey: db.prepare('UPDATE api_keys SET last_used_at = ? WHERE id = ?'),
      countKeys: db.prepare('SELECT count(*) FROM api_keys').pluck(),
      ping: db.prepare('SELECT 1').pluck(),
    };
    this.#insertItems = db.transaction((items: readonly InventoryItem[], at: string) => {
      for (const item of items) {
        const { changes } = this.#stmt.insertItem.run(item.petId, item.quantity, item.status, at, at);
        if (changes === 0) throw new DuplicatePetError(item.petId);
      }
    });
  }

  async listInventory(): Promise<InventoryItem[]> {
    return this.#run(() => (this.#stmt.list.all() as ItemRow[]).map(toItem));
  }

  async getItem(petId: bigint): Promise<InventoryItem | undefined> {
    return this.#run(() => {
      const row = this.#stmt.get.get(petId) as ItemRow | undefined;
      return row && toItem(row);
    });
  }

  async setQuantity(petId: bigint, quantity: number): Promise<InventoryItem | undefined> {
    return this.#run(() => {
      const row = this.#stmt.setQuantity.get(quantity, new Date().toISOString(), petId) as ItemRow | undefined;
      return row && toItem(row);
    });
  }

  async addItems(items: readonly InventoryItem[]): Promise<void> {
    this.#run(() => this.#insertItems.immediate(items, new Date().toISOString()));
  }

  async insertApiKey(record: ApiKeyRecord): Promise<void> {
    this.#run(() => this.#stmt.insertKey.run(toKeyRow(record)));
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
    this.#run(() => this.#stmt.touchKey.run(at.toISOString(), id));
  }

  async countApiKeys(): Promise<number> {
    return this.#run(() => Number(this.#stmt.countKeys.get()));
  }

  async ping(): Promise<void> {
    this.#run(() => this.#stmt.ping.get());
  }

  async close(): Promise<void> {
    if (this.#db.open) this.#db.close();
  }

  /** Runs a synchronous driver call, turning "cannot reach the store now" into StoreUnavailableError. */
  #run<T>(fn: () => T): T {
    if (!this.#db.open) throw new StoreUnavailableError('the SQLite store is closed');
    try {
      return fn();
    } catch (err) {
      if (isTransient(err)) throw new StoreUnavailableError('the SQLite store is busy or unavailable', { cause: err });
      throw err;
    }
  }
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
