import { Pool, escapeIdentifier, types, type CustomTypesConfig, type PoolClient, type PoolConfig, type QueryResult, type QueryResultRow } from 'pg';
import type { ApiKeyRecord } from '../domain/api-key.js';
import { StoreUnavailableError } from '../errors.js';
import type { InventoryItem } from '../schemas/inventory.js';
import { decodeOutcome, encodeOutcome, judgeChange } from './change.js';
import { POSTGRES_MIGRATIONS } from './migrations/postgres.js';
import { ChangeBatcher } from './postgres-changes.js';
import {
  DuplicatePetError,
  type ChangeOutcome,
  type ChangeResult,
  type HistoryEntry,
  type InventoryEntry,
  type InventoryStore,
  type QuantityChange,
} from './store.js';

/** Connections per instance: several instances share the server's max_connections (100 by default). */
export const POOL_MAX = 10;
/** Opening a connection, or waiting for a free one, longer than this answers 503 instead of queueing on. */
export const CONNECTION_TIMEOUT_MS = 3000;
/** Idle connections close after this, so a quiet instance holds few server slots. */
export const IDLE_TIMEOUT_MS = 30_000;
/** The server cancels any statement running longer (ours take milliseconds): no request hangs on a lock. */
export const STATEMENT_TIMEOUT_MS = 5000;
/** The client gives up this long after statement_timeout, for when the server itself stops answering. */
export const QUERY_TIMEOUT_GRACE_MS = 1000;
/** The server ends a transaction left idle this long (a frozen instance), releasing its row locks. */
export const IDLE_IN_TRANSACTION_TIMEOUT_MS = 10_000;
/** TCP keepalive starts probing after this much silence, so a peer that vanished without a FIN is noticed. */
export const KEEPALIVE_INITIAL_DELAY_MS = 10_000;
/** Shown in pg_stat_activity, so an operator can tell this service's connections apart. */
export const APPLICATION_NAME = 'petstore-inventory';
/** First half of the migration advisory lock ("pets" in ASCII); the second half is the schema's hash. */
export const MIGRATION_LOCK_KEY = 0x70657473;

/** Strict on purpose: the name goes into a startup option and DDL, where quoting rules differ. */
const SCHEMA_NAME = /^[a-z_][a-z0-9_]*$/;

export interface PostgresStoreOptions {
  /** Schema to create if missing and put on every connection's search_path (test isolation); default: the server's. */
  schema?: string;
  /** Overrides CONNECTION_TIMEOUT_MS. */
  connectionTimeoutMs?: number;
  /** Overrides STATEMENT_TIMEOUT_MS; the client-side read timeout follows it. */
  statementTimeoutMs?: number;
}

/** int8 as bigint (PD 3.2), for this pool only: a global parser would change every other pg user in the process. */
const INT8_AS_BIGINT: CustomTypesConfig = {
  getTypeParser: (...[oid, format]: Parameters<typeof types.getTypeParser>): unknown =>
    oid === types.builtins.INT8 ? (text: string) => BigInt(text) : types.getTypeParser(oid, format),
};

/** Selected under the names of InventoryItem, so a row is the item. */
const ITEM_COLUMNS = 'pet_id AS "petId", quantity, status';
/** Selected under the names of ApiKeyRecord; pg already returns TIMESTAMPTZ as Date and TEXT[] as string[]. */
const KEY_COLUMNS = `id, name, environment, key_hash AS "keyHash", hint, scopes, created_at AS "createdAt",
  last_used_at AS "lastUsedAt", expires_at AS "expiresAt", revoked_at AS "revokedAt"`;

/** Named, so each connection prepares a statement once and reuses the plan. */
const STATEMENTS = {
  list: { name: 'inventory-list', text: `SELECT ${ITEM_COLUMNS} FROM inventory ORDER BY pet_id` },
  get: { name: 'inventory-get', text: `SELECT ${ITEM_COLUMNS}, version FROM inventory WHERE pet_id = $1` },
  // Locks the row: changes of one pet run one after the other, in the order they took the lock.
  getForUpdate: { name: 'inventory-get-for-update', text: `SELECT ${ITEM_COLUMNS}, version FROM inventory WHERE pet_id = $1 FOR UPDATE` },
  update: {
    name: 'inventory-update',
    text: 'UPDATE inventory SET quantity = $2, version = version + 1, change_seq = $3, updated_at = $4 WHERE pet_id = $1 RETURNING version',
  },
  // Taken last in a writing transaction: holds the store_state row lock only for the commit itself.
  bumpVersion: { name: 'store-version-bump', text: 'UPDATE store_state SET version = version + 1 WHERE id = 1 RETURNING version' },
  stampInserted: {
    name: 'inventory-stamp-inserted',
    text: `WITH s AS (UPDATE store_state SET version = version + 1 WHERE id = 1 RETURNING version)
           UPDATE inventory SET change_seq = s.version FROM s WHERE pet_id = ANY($1::bigint[])`,
  },
  readVersion: { name: 'store-version', text: 'SELECT version FROM store_state WHERE id = 1' },
  // One statement is one snapshot: the version and the rows agree.
  changesSince: {
    name: 'inventory-changes-since',
    text: `SELECT s.version AS "storeVersion", i.pet_id AS "petId", i.quantity, i.status
           FROM store_state s LEFT JOIN inventory i ON i.change_seq > $1 WHERE s.id = 1 ORDER BY i.pet_id`,
  },
  insertHistory: {
    name: 'history-insert',
    text: `INSERT INTO inventory_history (pet_id, previous_quantity, quantity, at, key_id, key_name, request_id, reason)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
  },
  history: {
    name: 'history-page',
    text: `SELECT id, pet_id AS "petId", previous_quantity AS "previousQuantity", quantity, at, key_id AS "keyId", key_name AS "keyName",
             request_id AS "requestId", reason
           FROM inventory_history WHERE pet_id = $1 AND id < $2 ORDER BY id DESC LIMIT $3`,
  },
  hasEntry: { name: 'inventory-has', text: 'SELECT 1 FROM inventory WHERE pet_id = $1' },
  // Claims the key: a second request with the same key waits here until the first commits or rolls back.
  claimIdempotency: {
    name: 'idempotency-claim',
    text: `INSERT INTO idempotency_records (api_key_id, idem_key, fingerprint, outcome, created_at, expires_at)
           VALUES ($1, $2, $3, NULL, $4, $5) ON CONFLICT (api_key_id, idem_key) DO NOTHING RETURNING 1`,
  },
  findIdempotency: {
    name: 'idempotency-find',
    text: 'SELECT fingerprint, outcome, expires_at <= $3 AS expired FROM idempotency_records WHERE api_key_id = $1 AND idem_key = $2 FOR UPDATE',
  },
  saveIdempotency: {
    name: 'idempotency-save',
    text: `UPDATE idempotency_records SET fingerprint = $3, outcome = $4, created_at = $5, expires_at = $6
           WHERE api_key_id = $1 AND idem_key = $2`,
  },
  purgeIdempotency: { name: 'idempotency-purge', text: 'DELETE FROM idempotency_records WHERE expires_at <= $1' },
  // One statement for the whole batch; skipped rows (already present, or repeated in the batch) are missing from RETURNING.
  insertItems: {
    name: 'inventory-insert',
    text: `INSERT INTO inventory (pet_id, quantity, status, created_at, updated_at, change_seq)
           SELECT pet_id, quantity, status, now(), now(), 0 FROM unnest($1::bigint[], $2::integer[], $3::text[]) AS t(pet_id, quantity, status)
           ON CONFLICT (pet_id) DO NOTHING RETURNING pet_id AS "petId"`,
  },
  insertKey: {
    name: 'key-insert',
    text: `INSERT INTO api_keys (id, name, environment, key_hash, hint, scopes, created_at, last_used_at, expires_at, revoked_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
  },
  // Under FIRST_KEY_LOCK: read committed sees a key another instance committed while we waited.
  insertFirstKey: {
    name: 'key-insert-first',
    text: `INSERT INTO api_keys (id, name, environment, key_hash, hint, scopes, created_at, last_used_at, expires_at, revoked_at)
           SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10 WHERE NOT EXISTS (SELECT 1 FROM api_keys)`,
  },
  keyByHash: { name: 'key-by-hash', text: `SELECT ${KEY_COLUMNS} FROM api_keys WHERE key_hash = $1` },
  listKeys: { name: 'key-list', text: `SELECT ${KEY_COLUMNS} FROM api_keys ORDER BY created_at, id` },
  revokeKey: { name: 'key-revoke', text: 'UPDATE api_keys SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL' },
  touchKey: { name: 'key-touch', text: 'UPDATE api_keys SET last_used_at = $2 WHERE id = $1' },
  ping: { name: 'ping', text: 'SELECT 1' },
} as const;

/**
 * Opens a pool on the PostgreSQL database at `url`, applies pending migrations (once, however
 * many processes open at the same moment) and returns the store.
 */
export async function openPostgresStore(url: string, options: PostgresStoreOptions = {}): Promise<InventoryStore> {
  const pool = new Pool(poolConfig(url, options));
  // An idle connection that drops is already out of the pool and the next query reconnects; unhandled, this event would kill the process.
  pool.on('error', ignore);
  try {
    await migrate(pool, options.schema);
  } catch (err) {
    await pool.end();
    throw asUnavailable(err);
  }
  return new PostgresStore(pool);
}

function poolConfig(url: string, options: PostgresStoreOptions): PoolConfig {
  // The URL's options would replace ours wholesale, silently dropping synchronous_commit (PD 5.2).
  if (/[?&]options=/.test(url)) throw new Error('DATABASE_URL must not set options=: the store sets the session options itself');
  // on: a COMMIT returns only once the WAL is flushed, so a 200 survives a crash or power loss (PD 5.2).
  const settings = ['-c synchronous_commit=on'];
  if (options.schema !== undefined) {
    if (!SCHEMA_NAME.test(options.schema)) throw new Error(`schema must match ${SCHEMA_NAME.source}, got "${options.schema}"`);
    settings.push(`-c search_path=${options.schema}`);
  }
  const statementTimeout = options.statementTimeoutMs ?? STATEMENT_TIMEOUT_MS;
  return {
    connectionString: url,
    max: POOL_MAX,
    connectionTimeoutMillis: options.connectionTimeoutMs ?? CONNECTION_TIMEOUT_MS,
    idleTimeoutMillis: IDLE_TIMEOUT_MS,
    statement_timeout: statementTimeout,
    query_timeout: statementTimeout + QUERY_TIMEOUT_GRACE_MS,
    idle_in_transaction_session_timeout: IDLE_IN_TRANSACTION_TIMEOUT_MS,
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_INITIAL_DELAY_MS,
    application_name: APPLICATION_NAME,
    options: settings.join(' '),
    types: INT8_AS_BIGINT,
  };
}

async function migrate(pool: Pool, schema: string | undefined): Promise<void> {
  await inTransaction(pool, async (client) => {
    // Held until COMMIT, so processes opening together migrate one at a time; keyed by schema so separate schemas never wait for each other.
    await client.query("SELECT pg_advisory_xact_lock($1, hashtext(coalesce($2::text, current_schema(), '')))", [
      MIGRATION_LOCK_KEY,
      schema ?? null,
    ]);
    if (schema !== undefined) await client.query(`CREATE SCHEMA IF NOT EXISTS ${escapeIdentifier(schema)}`);
    await client.query(
      'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL)',
    );
    const { rows } = await client.query<{ version: number }>('SELECT version FROM schema_migrations');
    const applied = new Set(rows.map((r) => r.version));
    for (const m of POSTGRES_MIGRATIONS) {
      if (applied.has(m.version)) continue;
      await client.query(m.sql);
      await client.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, now())', [m.version, m.name]);
    }
  });
}

/** Runs fn between BEGIN and COMMIT on one pooled connection; on failure rolls back, or drops a connection that cannot. */
async function inTransaction<T>(pool: Pool, fn: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  // A connection dropping between our statements fails the next one; unhandled, the event would kill the process.
  client.on('error', ignore);
  let reusable = true;
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    // After a lost or silent connection a ROLLBACK would only wait out another timeout; dropping the connection rolls back too.
    reusable = !isTransient(err) && (await client.query('ROLLBACK').then(() => true, () => false));
    throw err;
  } finally {
    client.off('error', ignore);
    client.release(!reusable);
  }
}

class PostgresStore implements InventoryStore {
  readonly backend = 'postgres' as const;
  readonly #pool: Pool;
  /** Changes without an Idempotency-Key, committed in groups (src/store/postgres-changes.ts). */
  readonly #changes: ChangeBatcher;
  #closed: Promise<void> | undefined;

  constructor(pool: Pool) {
    this.#pool = pool;
    this.#changes = new ChangeBatcher((statement, values) => this.#query(statement, values));
  }

  async listInventory(): Promise<InventoryItem[]> {
    return (await this.#query<InventoryItem>(STATEMENTS.list)).rows;
  }

  async getEntry(petId: bigint): Promise<InventoryEntry | undefined> {
    const row = (await this.#query<EntryRow>(STATEMENTS.get, [petId.toString()])).rows[0];
    return row && toEntry(row);
  }

  async applyChange(change: QuantityChange): Promise<ChangeResult> {
    if (change.idempotency) return this.#run(() => inTransaction(this.#pool, (client) => applyInTransaction(client, change)));
    return this.#changes.apply(change);
  }

  async addItems(items: readonly InventoryItem[]): Promise<void> {
    await this.#run(() =>
      inTransaction(this.#pool, async (client) => {
        // change_seq is set from the bumped version at the end, keeping store_state the last lock taken, as in applyChange.
        const { rows } = await client.query<{ petId: bigint }>({
          ...STATEMENTS.insertItems,
          values: [items.map((i) => i.petId.toString()), items.map((i) => i.quantity), items.map((i) => i.status)],
        });
        const inserted = new Set(rows.map((r) => r.petId));
        const seen = new Set<bigint>();
        // The first item that was not inserted is the one SQLite's row-by-row insert stops at.
        for (const { petId } of items) {
          if (!inserted.has(petId) || seen.has(petId)) throw new DuplicatePetError(petId);
          seen.add(petId);
        }
        await client.query(STATEMENTS.stampInserted, [rows.map((r) => r.petId.toString())]);
      }),
    );
  }

  async listHistory(petId: bigint, page: { limit: number; before?: bigint }): Promise<HistoryEntry[] | undefined> {
    const id = petId.toString();
    const [exists, history] = await Promise.all([
      this.#query(STATEMENTS.hasEntry, [id]),
      this.#query<HistoryEntry>(STATEMENTS.history, [id, (page.before ?? 2n ** 63n - 1n).toString(), page.limit]),
    ]);
    return exists.rowCount === 0 ? undefined : history.rows;
  }

  async purgeIdempotencyRecords(now: Date): Promise<number> {
    return (await this.#query(STATEMENTS.purgeIdempotency, [now.toISOString()])).rowCount ?? 0;
  }

  async readVersion(): Promise<number> {
    return Number((await this.#query<{ version: bigint }>(STATEMENTS.readVersion)).rows[0]!.version);
  }

  async changesSince(after: number): Promise<{ version: number; items: InventoryItem[] }> {
    const { rows } = await this.#query<{ storeVersion: bigint; petId: bigint | null } & Omit<InventoryItem, 'petId'>>(STATEMENTS.changesSince, [after]);
    const items = rows.filter((r) => r.petId !== null).map((r) => ({ petId: r.petId!, quantity: r.quantity, status: r.status }));
    return { version: Number(rows[0]!.storeVersion), items };
  }

  async insertFirstApiKey(r: ApiKeyRecord): Promise<boolean> {
    return this.#run(() =>
      inTransaction(this.#pool, async (client) => {
        // Instances starting together take turns, so only the first finds no key.
        await client.query("SELECT pg_advisory_xact_lock($1, hashtext('first-api-key:' || current_schema()))", [MIGRATION_LOCK_KEY]);
        return (await client.query({ ...STATEMENTS.insertFirstKey, values: keyValues(r) })).rowCount === 1;
      }),
    );
  }

  async insertApiKey(r: ApiKeyRecord): Promise<void> {
    await this.#query(STATEMENTS.insertKey, keyValues(r));
  }

  async findApiKeyByHash(keyHash: string): Promise<ApiKeyRecord | undefined> {
    return (await this.#query<ApiKeyRecord>(STATEMENTS.keyByHash, [keyHash])).rows[0];
  }

  async listApiKeys(): Promise<ApiKeyRecord[]> {
    return (await this.#query<ApiKeyRecord>(STATEMENTS.listKeys)).rows;
  }

  async revokeApiKey(id: string, at: Date): Promise<boolean> {
    return (await this.#query(STATEMENTS.revokeKey, [id, at.toISOString()])).rowCount === 1;
  }

  async touchApiKey(id: string, at: Date): Promise<void> {
    await this.#query(STATEMENTS.touchKey, [id, at.toISOString()]);
  }

  async ping(): Promise<void> {
    await this.#query(STATEMENTS.ping);
  }

  async close(): Promise<void> {
    this.#closed ??= this.#pool.end();
    await this.#closed;
  }

  #query<R extends QueryResultRow>(statement: { name: string; text: string }, values: unknown[] = []): Promise<QueryResult<R>> {
    return this.#run(() => this.#pool.query<R>({ ...statement, values }));
  }

  /** Runs one driver call, turning "cannot reach the store now" into StoreUnavailableError. */
  async #run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#closed) throw new StoreUnavailableError('the PostgreSQL store is closed');
    try {
      return await fn();
    } catch (err) {
      throw asUnavailable(err);
    }
  }
}

type EntryRow = InventoryItem & { version: bigint };

/** A key record as the parameters of insertKey and insertFirstKey. */
function keyValues(r: ApiKeyRecord): unknown[] {
  return [
    r.id,
    r.name,
    r.environment,
    r.keyHash,
    r.hint,
    r.scopes,
    r.createdAt.toISOString(),
    r.lastUsedAt?.toISOString() ?? null,
    r.expiresAt?.toISOString() ?? null,
    r.revokedAt?.toISOString() ?? null,
  ];
}

function toEntry({ version, ...item }: EntryRow): InventoryEntry {
  return { item, version: Number(version) };
}

/** One change inside its transaction: idempotency claim, row lock, judgement, update, history, store version, record. */
async function applyInTransaction(client: PoolClient, change: QuantityChange): Promise<ChangeResult> {
  const at = change.at.toISOString();
  const idem = change.idempotency;
  if (idem) {
    const claimed = await client.query(STATEMENTS.claimIdempotency, [change.keyId, idem.key, idem.fingerprint, at, idem.expiresAt.toISOString()]);
    if (claimed.rowCount === 0) {
      const found = (await client.query<{ fingerprint: string; outcome: string | null; expired: boolean }>(STATEMENTS.findIdempotency, [change.keyId, idem.key, at])).rows[0]!;
      if (!found.expired) {
        if (found.fingerprint !== idem.fingerprint) return { kind: 'idempotency_key_reused' };
        // A committed claim always holds its outcome; NULL would mean a claim that never finished, which a rollback removes.
        if (found.outcome !== null) return { ...decodeOutcome(found.outcome), replayed: true };
      }
    }
  }
  const current = (await client.query<EntryRow>(STATEMENTS.getForUpdate, [change.petId.toString()])).rows[0];
  const verdict = judgeChange(current && toEntry(current), change.condition);
  let outcome: ChangeOutcome;
  if (verdict.kind === 'apply') {
    await client.query(STATEMENTS.insertHistory, [
      change.petId.toString(),
      verdict.current.item.quantity,
      change.quantity,
      at,
      change.keyId,
      change.keyName,
      change.requestId,
      change.reason,
    ]);
    const seq = (await client.query<{ version: bigint }>(STATEMENTS.bumpVersion)).rows[0]!.version;
    const version = (await client.query<{ version: bigint }>(STATEMENTS.update, [change.petId.toString(), change.quantity, seq.toString(), at])).rows[0]!.version;
    outcome = { kind: 'updated', entry: { item: { ...verdict.current.item, quantity: change.quantity }, version: Number(version) } };
  } else {
    outcome = verdict;
  }
  if (idem) {
    await client.query(STATEMENTS.saveIdempotency, [change.keyId, idem.key, idem.fingerprint, encodeOutcome(outcome), at, idem.expiresAt.toISOString()]);
  }
  return { ...outcome, replayed: false };
}

/**
 * SQLSTATEs that mean "not now" rather than "never": connection exceptions (08), insufficient
 * resources (53), shutdown and session kills (57P0x), statement timeout or cancel (57014),
 * lock timeout (55P03), idle-in-transaction timeout (25P03), I/O error (58030), and conflicts a
 * retry resolves (40001 serialization, 40P01 deadlock).
 */
const TRANSIENT_SQLSTATE = /^(08...|53...|57P0.|57014|55P03|25P03|58030|40001|40P01)$/;
/** Socket and DNS failures: the server cannot be reached from here right now. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'EAI_AGAIN',
  'ENOTFOUND',
]);
/** The driver's own connection failures carry no code, only these messages (pg 8, pg-pool 3). */
const DRIVER_CONNECTION_MESSAGE =
  /^(Connection terminated|timeout exceeded when trying to connect|Query read timeout|Client (has encountered a connection error|was closed) and is not queryable|Cannot use a pool after calling end)/;

/** Lost connection, timeout, shutdown, exhaustion or a retryable conflict: worth a retry, not a 500. */
function isTransient(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') return TRANSIENT_SQLSTATE.test(code) || NETWORK_CODES.has(code);
  // Node reports a refused connection to every address of a host (localhost: ::1 and 127.0.0.1) as one AggregateError.
  if (err instanceof AggregateError) return err.errors.some(isTransient);
  return DRIVER_CONNECTION_MESSAGE.test(err.message);
}

function asUnavailable(err: unknown): unknown {
  return isTransient(err) ? new StoreUnavailableError('the PostgreSQL store is unreachable or busy', { cause: err }) : err;
}

function ignore(): void {}
