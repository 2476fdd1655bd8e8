import type { Pool, QueryResult, QueryResultRow } from 'pg';
import type { ApiKeyRecord } from '../../domain/api-key.js';
import type { HistoryEntry } from '../../domain/history.js';
import type { ImportOutcome, ImportPlan, ImportSource } from '../../domain/import.js';
import type { ChangeResult, InventoryEntry, QuantityChange, RetireOutcome } from '../../domain/inventory.js';
import { StoreUnavailableError } from '../../errors.js';
import type { InventoryItem } from '../../schemas/inventory.js';
import { clock, DEFAULT_STORE_TIMEOUT_MS } from '../deadline.js';
import { changeGroupCommit, type GroupCommit } from '../group-commit.js';
import { HOUSEKEEPING_BATCH, inBatches, oldPrefix } from '../housekeeping.js';
import { DuplicatePetError, type ConnectionDurability, type EntryChanges, type InventoryStore } from '../store.js';
import { applyBatch, type Database, type Statement } from './apply-batch.js';
import { importByCopy } from './import.js';
import { asUnavailable, inTransaction, MIGRATION_LOCK_KEY, openPool, queryBy, queryOnPool, type PostgresStoreOptions } from './pool.js';

/** Selected under the names of InventoryItem, so a row is the item. */
const ITEM_COLUMNS = 'pet_id AS "petId", quantity, status';
/** Selected under the names of ApiKeyRecord; pg already returns TIMESTAMPTZ as Date and TEXT[] as string[]. */
const KEY_COLUMNS = `id, name, environment, key_hash AS "keyHash", hint, scopes, created_at AS "createdAt",
  last_used_at AS "lastUsedAt", expires_at AS "expiresAt", revoked_at AS "revokedAt"`;

/** Named, so each connection prepares a statement once and reuses the plan. */
const STATEMENTS = {
  list: { name: 'inventory-list', text: `SELECT ${ITEM_COLUMNS} FROM inventory WHERE retired_at IS NULL ORDER BY pet_id` },
  // Keyset pages: a range of the primary key, however deep into the list.
  firstPage: { name: 'inventory-first-page', text: `SELECT ${ITEM_COLUMNS} FROM inventory WHERE retired_at IS NULL ORDER BY pet_id LIMIT $1` },
  nextPage: { name: 'inventory-next-page', text: `SELECT ${ITEM_COLUMNS} FROM inventory WHERE pet_id > $1 AND retired_at IS NULL ORDER BY pet_id LIMIT $2` },
  get: { name: 'inventory-get', text: `SELECT ${ITEM_COLUMNS}, version FROM inventory WHERE pet_id = $1 AND retired_at IS NULL` },
  stampInserted: {
    name: 'inventory-stamp-inserted',
    text: `WITH s AS (UPDATE store_state SET version = version + 1 WHERE id = 1 RETURNING version)
           UPDATE inventory SET change_seq = s.version FROM s WHERE pet_id = ANY($1::bigint[])`,
  },
  readVersion: { name: 'store-version', text: 'SELECT version FROM store_state WHERE id = 1' },
  // One statement is one snapshot: the version and the rows agree.
  // From before a bulk write (reload_from), every entry: the whole list.
  changesSince: {
    name: 'inventory-changes-since',
    text: `SELECT s.version AS "storeVersion", s.reload_from > $1 AS reload, i.pet_id AS "petId", i.quantity, i.status, i.retired_at IS NOT NULL AS retired
           FROM store_state s LEFT JOIN inventory i ON i.change_seq > (CASE WHEN s.reload_from > $1 THEN -1 ELSE $1 END)
           WHERE s.id = 1 ORDER BY i.pet_id`,
  },
  // The entry's row first, then store_state, as in every write; the version is bumped only when it retires.
  lockEntry: { name: 'inventory-lock', text: `SELECT ${ITEM_COLUMNS} FROM inventory WHERE pet_id = $1 AND retired_at IS NULL FOR UPDATE` },
  retire: {
    name: 'inventory-retire',
    text: `WITH s AS (UPDATE store_state SET version = version + 1 WHERE id = 1 RETURNING version)
           UPDATE inventory SET retired_at = $2, updated_at = $2, change_seq = s.version FROM s WHERE pet_id = $1`,
  },
  history: {
    name: 'history-page',
    text: `SELECT id, pet_id AS "petId", previous_quantity AS "previousQuantity", quantity, at, key_id AS "keyId", key_name AS "keyName",
             request_id AS "requestId", reason
           FROM inventory_history
           WHERE pet_id = $1 AND ($2::bigint IS NULL OR (id < $2 AND EXISTS (SELECT 1 FROM inventory_history b WHERE b.id = $2 AND b.pet_id = $1)))
           ORDER BY id DESC LIMIT $3`,
  },
  syncCommit: { name: 'synchronous-commit', text: 'SHOW synchronous_commit' },
  hasEntry: { name: 'inventory-has', text: 'SELECT 1 FROM inventory WHERE pet_id = $1' },
  idempotencyHolders: { name: 'idempotency-holders', text: 'SELECT api_key_id AS "keyId" FROM idempotency_counts WHERE records > 0 ORDER BY api_key_id' },
  // The count first, as every writer of an API key's records takes it (see LOCK_COUNTS): no waiting in a circle with a batch.
  lockCount: { name: 'idempotency-lock-count', text: 'SELECT 1 FROM idempotency_counts WHERE api_key_id = $1 FOR UPDATE' },
  purgeIdempotency: {
    name: 'idempotency-purge',
    text: `DELETE FROM idempotency_records WHERE api_key_id = $1 AND key_hash IN
             (SELECT key_hash FROM idempotency_records WHERE api_key_id = $1 AND expires_at <= $2 LIMIT $3)`,
  },
  // Rows in id order: the oldest first (a late commit may sit among older ids; the age check on delete leaves it).
  historyHead: { name: 'history-head', text: 'SELECT id, at FROM inventory_history WHERE id > $1 ORDER BY id LIMIT $2' },
  // Each entry's newest row stays, so the last change of its count stays visible.
  pruneHistory: {
    name: 'history-prune',
    text: `DELETE FROM inventory_history h WHERE h.id > $1 AND h.id <= $2 AND h.at < $3
             AND EXISTS (SELECT 1 FROM inventory_history n WHERE n.pet_id = h.pet_id AND n.id > h.id)`,
  },
  // One statement for the whole batch (each petId once), rows in petId order as every write locks them; a retired entry
  // is revived (its version goes on, so no ETag repeats), an active one is left alone and missing from RETURNING.
  insertItems: {
    name: 'inventory-insert',
    text: `INSERT INTO inventory (pet_id, quantity, status, created_at, updated_at, change_seq)
           SELECT pet_id, quantity, status, now(), now(), 0 FROM unnest($1::bigint[], $2::integer[], $3::text[]) AS t(pet_id, quantity, status)
           ORDER BY pet_id
           ON CONFLICT (pet_id) DO UPDATE SET quantity = excluded.quantity, status = excluded.status, retired_at = NULL,
             version = inventory.version + 1, updated_at = excluded.updated_at
           WHERE inventory.retired_at IS NOT NULL RETURNING pet_id AS "petId"`,
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
} as const satisfies Record<string, Statement>;

/**
 * Opens a pool on the PostgreSQL database at `url`, applies pending migrations (once, however
 * many processes open at the same moment) and returns the store. Each call a request makes ends
 * within `timeoutMs` (STORE_TIMEOUT_MS) of when it was made, waiting for a connection included;
 * a change of quantity within `timeoutMs` of its submit, waiting behind the batch in flight included.
 */
export async function openPostgresStore(url: string, options: PostgresStoreOptions = {}): Promise<InventoryStore> {
  return new PostgresStore(await openPool(url, options), options.timeoutMs ?? DEFAULT_STORE_TIMEOUT_MS);
}

class PostgresStore implements InventoryStore {
  readonly backend = 'postgres' as const;
  readonly #pool: Pool;
  /** Changes of quantity, committed in groups. */
  readonly #changes: GroupCommit<QuantityChange, ChangeResult>;
  #closed: Promise<void> | undefined;
  /** Set once the pool is being ended, after the accepted changes are committed. */
  #ended = false;

  /** STORE_TIMEOUT_MS. */
  readonly #timeoutMs: number;

  constructor(pool: Pool, timeoutMs: number) {
    this.#pool = pool;
    this.#timeoutMs = timeoutMs;
    this.#changes = changeGroupCommit(
      // A batch is given up once none of its changes is awaited any more.
      (batch, deadline) => this.#run(() => applyBatch(this.#database(deadline ?? clock() + timeoutMs), batch)),
      { timeoutMs },
    );
  }

  /** Where a batch runs, every wait of it ending by `deadline`. */
  #database(deadline: number): Database {
    return {
      query: (statement, values) => queryOnPool(this.#pool, { ...statement, values }, deadline),
      transaction: (fn) => inTransaction(this.#pool, (client) => fn((statement, values) => queryBy(client, { ...statement, values }, deadline)), deadline),
    };
  }

  async listInventory(): Promise<InventoryItem[]> {
    return (await this.#query<InventoryItem>(STATEMENTS.list)).rows;
  }

  async listInventoryPage(after: bigint | undefined, limit: number): Promise<InventoryItem[]> {
    const { rows } =
      after === undefined
        ? await this.#query<InventoryItem>(STATEMENTS.firstPage, [limit])
        : await this.#query<InventoryItem>(STATEMENTS.nextPage, [after.toString(), limit]);
    return rows;
  }

  async getEntry(petId: bigint): Promise<InventoryEntry | undefined> {
    const row = (await this.#query<EntryRow>(STATEMENTS.get, [petId.toString()])).rows[0];
    return row && toEntry(row);
  }

  /** The batch is one statement (one round trip and one commit), or one transaction when changes carry idempotency keys. */
  applyChange(change: QuantityChange): Promise<ChangeResult> {
    return this.#changes.submit(change);
  }

  async addItems(items: readonly InventoryItem[]): Promise<void> {
    // A statement may update a row once: a petId repeated in the batch is the duplicate, unless one before it already is.
    const seen = new Set<bigint>();
    const repeated = items.findIndex(({ petId }) => {
      if (seen.has(petId)) return true;
      seen.add(petId);
      return false;
    });
    const unique = repeated < 0 ? items : items.slice(0, repeated);
    await this.#run(() =>
      inTransaction(this.#pool, async (client) => {
        // change_seq is set from the bumped version at the end, keeping store_state the last lock taken, as in applyChange.
        const { rows } = await client.query<{ petId: bigint }>({
          ...STATEMENTS.insertItems,
          values: [unique.map((i) => i.petId.toString()), unique.map((i) => i.quantity), unique.map((i) => i.status)],
        });
        const inserted = new Set(rows.map((r) => r.petId));
        // The first item that was not inserted is the one SQLite's row-by-row insert stops at.
        const refused = unique.find((i) => !inserted.has(i.petId)) ?? items[repeated];
        if (refused) throw new DuplicatePetError(refused.petId);
        await client.query(STATEMENTS.stampInserted, [rows.map((r) => r.petId.toString())]);
      }),
    );
  }

  async retireEntry(petId: bigint, options: { force: boolean; at: Date }): Promise<RetireOutcome> {
    return this.#run(() =>
      inTransaction(this.#pool, async (client): Promise<RetireOutcome> => {
        const item = (await client.query<InventoryItem>({ ...STATEMENTS.lockEntry, values: [petId.toString()] })).rows[0];
        if (!item) return { kind: 'not_found' };
        if (item.quantity > 0 && !options.force) return { kind: 'in_stock', item };
        await client.query({ ...STATEMENTS.retire, values: [petId.toString(), options.at.toISOString()] });
        return { kind: 'retired', item };
      }),
    );
  }

  async importItems(source: ImportSource, plan: ImportPlan): Promise<ImportOutcome> {
    return this.#run(() => importByCopy(this.#pool, source, plan));
  }

  async listHistory(petId: bigint, page: { limit: number; before?: bigint }): Promise<HistoryEntry[] | undefined> {
    const id = petId.toString();
    const [exists, history] = await Promise.all([
      this.#query(STATEMENTS.hasEntry, [id]),
      this.#query<HistoryEntry>(STATEMENTS.history, [id, page.before?.toString() ?? null, page.limit]),
    ]);
    return exists.rowCount === 0 ? undefined : history.rows;
  }

  async purgeIdempotencyRecords(now: Date): Promise<number> {
    const at = now.toISOString();
    let total = 0;
    for (const { keyId } of (await this.#query<{ keyId: string }>(STATEMENTS.idempotencyHolders)).rows) {
      total += await inBatches(keyId, async () => {
        const deleted = await this.#run(() =>
          inTransaction(this.#pool, async (client) => {
            await client.query({ ...STATEMENTS.lockCount, values: [keyId] });
            return (await client.query({ ...STATEMENTS.purgeIdempotency, values: [keyId, at, HOUSEKEEPING_BATCH] })).rowCount ?? 0;
          }),
        );
        return deleted === HOUSEKEEPING_BATCH ? { deleted, next: keyId } : { deleted };
      });
    }
    return total;
  }

  /** Each instance may prune: a step another is running at the same moment waits for it briefly and deletes nothing twice. */
  async purgeHistory(before: Date): Promise<number> {
    return inBatches(0n, async (after) => {
      const head = (await this.#query<{ id: bigint; at: Date }>(STATEMENTS.historyHead, [after.toString(), HOUSEKEEPING_BATCH])).rows;
      const { last, more } = oldPrefix(
        head.map((r) => [r.id, r.at] as const),
        (at) => at < before,
      );
      if (last === undefined) return { deleted: 0 };
      const deleted = (await this.#query(STATEMENTS.pruneHistory, [after.toString(), last.toString(), before.toISOString()])).rowCount ?? 0;
      return more ? { deleted, next: last } : { deleted };
    });
  }

  async readVersion(): Promise<number> {
    return Number((await this.#query<{ version: bigint }>(STATEMENTS.readVersion)).rows[0]!.version);
  }

  async changesSince(after: number): Promise<EntryChanges> {
    type Row = { storeVersion: bigint; reload: boolean; petId: bigint | null; retired: boolean | null } & Omit<InventoryItem, 'petId'>;
    const { rows } = await this.#query<Row>(STATEMENTS.changesSince, [after]);
    const complete = after < 0 || rows[0]!.reload;
    const items: InventoryItem[] = [];
    const removed: bigint[] = [];
    for (const r of rows) {
      if (r.petId === null) continue;
      if (!r.retired) items.push({ petId: r.petId, quantity: r.quantity, status: r.status });
      else if (!complete) removed.push(r.petId);
    }
    return { version: Number(rows[0]!.storeVersion), items, removed, complete };
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

  async durability(): Promise<ConnectionDurability[]> {
    // Every connection of the pool is opened with the same session settings.
    const { rows } = await this.#query<{ synchronous_commit: string }>(STATEMENTS.syncCommit);
    return [{ connection: 'pool', settings: { synchronous_commit: rows[0]!.synchronous_commit } }];
  }

  async ping(): Promise<void> {
    await this.#query(STATEMENTS.ping);
  }

  async close(): Promise<void> {
    this.#closed ??= this.#changes.close().then(() => {
      this.#ended = true;
      return this.#pool.end();
    });
    await this.#closed;
  }

  /** One statement, answered (or given up) within the store timeout of this call, waiting for a connection included. */
  #query<R extends QueryResultRow>(statement: Statement, values: unknown[] = []): Promise<QueryResult<R>> {
    return this.#run(() => queryOnPool<R>(this.#pool, { ...statement, values }, clock() + this.#timeoutMs));
  }

  /** Runs one driver call, turning "cannot reach the store now" into StoreUnavailableError. */
  async #run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#ended) throw new StoreUnavailableError('the PostgreSQL store is closed');
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
