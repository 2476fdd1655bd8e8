import { finished } from 'node:stream/promises';
import type { PoolClient, QueryConfig, QueryResultRow } from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { firstConflicts, locationOf, type ImportConflict, type ImportOutcome, type ImportPlan, type ImportRow, type ImportSource } from '../../domain/import.js';
import type { PetStatus } from '../../schemas/inventory.js';
import { BULK_WRITE } from '../store.js';
import { beginStatement, BULK_STATEMENT_TIMEOUT_MS, QUERY_TIMEOUT_GRACE_MS, type StorePool } from './connection.js';

/**
 * The staging table: a temporary one, which writes no WAL, dropped with the import's transaction
 * (a pooler may hand the server connection to another client right after).
 */
const CREATE_STAGING = `CREATE TEMP TABLE import_rows (
  seq bigint NOT NULL, line bigint NOT NULL, item bigint, pet_id bigint NOT NULL, quantity integer NOT NULL, status text NOT NULL) ON COMMIT DROP`;
const COPY_STAGING = 'COPY import_rows (seq, line, item, pet_id, quantity, status) FROM STDIN';
/** The events of the import, staged before the writes (they need the entries as they were), numbered 1.. in petId order. */
const CREATE_EVENTS = `CREATE TEMP TABLE import_events (
  ord bigint NOT NULL, type text NOT NULL, pet_id bigint NOT NULL, status text NOT NULL, previous_quantity integer, quantity integer NOT NULL,
  version bigint NOT NULL, reason text) ON COMMIT DROP`;

/** How many rows repeat a petId of an earlier row. */
const REPEATS = `SELECT coalesce(sum(n - 1), 0) AS n FROM (SELECT count(*) AS n FROM import_rows GROUP BY pet_id HAVING count(*) > 1) d`;
/** The first rows that repeat a petId, in file order, with the row that had it first. */
const FIRST_REPEATS = `WITH firsts AS (SELECT pet_id, min(seq) AS seq FROM import_rows GROUP BY pet_id HAVING count(*) > 1)
  SELECT r.line, r.item, r.pet_id AS "petId", f1.line AS "firstLine", f1.item AS "firstItem"
  FROM firsts f JOIN import_rows r ON r.pet_id = f.pet_id AND r.seq <> f.seq JOIN import_rows f1 ON f1.seq = f.seq
  ORDER BY r.seq LIMIT $1`;
/** Keeps the first row of each petId, so that the checks below name each row once. */
const DROP_REPEATS = `DELETE FROM import_rows r USING (SELECT pet_id, min(seq) AS seq FROM import_rows GROUP BY pet_id HAVING count(*) > 1) f
  WHERE r.pet_id = f.pet_id AND r.seq <> f.seq`;

/** Rows whose entry exists; with upsert ($1) only those whose status differs. */
const CONFLICTS_WHERE = 'i.retired_at IS NULL AND (NOT $1 OR i.status <> s.status)';
const FIRST_CONFLICTS = `SELECT s.line, s.item, s.pet_id AS "petId", i.status AS stored, s.status AS given
  FROM import_rows s JOIN inventory i ON i.pet_id = s.pet_id WHERE ${CONFLICTS_WHERE} ORDER BY s.seq LIMIT $2`;
const CONFLICT_COUNT = `SELECT count(*) AS n FROM import_rows s JOIN inventory i ON i.pet_id = s.pet_id WHERE ${CONFLICTS_WHERE}`;

/** Locks the entries the import may write, in petId order as every write does, so it cannot deadlock with a batch of changes. */
const LOCK_EXISTING = `SELECT count(*) AS n FROM (SELECT 1 FROM inventory i WHERE i.pet_id IN (SELECT pet_id FROM import_rows)
  ORDER BY i.pet_id FOR UPDATE) l`;
/**
 * Once the new entries are created, only the rows of entries that were there are left to write:
 * the rest leave the staging table (back at the savepoint if the import is refused), so that what
 * runs under the locks reads only those.
 */
const DROP_CREATED = 'DELETE FROM import_rows s USING import_events e WHERE e.pet_id = s.pet_id';
/** What an import will do (after its creations: what it does to the entries that were there); its total decides how the store version tells readers. */
const WRITES = `SELECT count(*) FILTER (WHERE i.pet_id IS NULL OR i.retired_at IS NOT NULL) AS created,
    count(*) FILTER (WHERE i.retired_at IS NULL AND i.quantity <> s.quantity) AS updated
  FROM import_rows s LEFT JOIN inventory i ON i.pet_id = s.pet_id`;
/** Each change of quantity, as a PATCH writes it. */
const HISTORY = `INSERT INTO inventory_history (pet_id, previous_quantity, quantity, at, key_id, key_name, request_id, reason)
  SELECT i.pet_id, i.quantity, s.quantity, $1, $2, $3, $4, 'correction' FROM import_rows s JOIN inventory i ON i.pet_id = s.pet_id
  WHERE i.retired_at IS NULL AND i.quantity <> s.quantity ORDER BY i.pet_id`;
const UPDATE = `UPDATE inventory i SET quantity = s.quantity, version = i.version + 1, updated_at = $1, change_seq = $2
  FROM import_rows s WHERE i.pet_id = s.pet_id AND i.retired_at IS NULL AND i.quantity <> s.quantity`;
const REVIVE = `UPDATE inventory i SET quantity = s.quantity, status = s.status, retired_at = NULL, version = i.version + 1,
    updated_at = $1, change_seq = $2
  FROM import_rows s WHERE i.pet_id = s.pet_id AND i.retired_at IS NOT NULL`;
/**
 * The entries no petId of the store had, with their events staged first in petId order (a new entry's
 * version is 1); how many. In file order: sorting a million rows costs more than the index gains
 * from sorted keys (an export is sorted already).
 */
const CREATE = `WITH c AS (INSERT INTO inventory (pet_id, quantity, status, created_at, updated_at, change_seq)
    SELECT s.pet_id, s.quantity, s.status, $1, $1, $2 FROM import_rows s WHERE NOT EXISTS (SELECT 1 FROM inventory i WHERE i.pet_id = s.pet_id)
    RETURNING pet_id, quantity, status),
  e AS (INSERT INTO import_events (ord, type, pet_id, status, previous_quantity, quantity, version, reason)
    SELECT row_number() OVER (ORDER BY pet_id), 'inventory.created', pet_id, status, NULL, quantity, 1, NULL FROM c RETURNING 1)
  SELECT count(*) AS n FROM e`;
/**
 * The event of every entry that was there and the import will write (a revival is a creation), with
 * the version the write will give it, numbered after the creations' ($2): the same rules as the
 * writes above ($1: upsert). An entry the import created has the file's quantity, so none is here.
 */
const STAGE_EVENTS = `INSERT INTO import_events (ord, type, pet_id, status, previous_quantity, quantity, version, reason)
  SELECT $2::bigint + row_number() OVER (ORDER BY s.pet_id), CASE WHEN c.created THEN 'inventory.created' ELSE 'inventory.updated' END, s.pet_id, s.status,
    CASE WHEN c.created THEN NULL ELSE i.quantity END, s.quantity, coalesce(i.version + 1, 1), CASE WHEN c.created THEN NULL ELSE 'correction' END
  FROM import_rows s LEFT JOIN inventory i ON i.pet_id = s.pet_id, LATERAL (SELECT i.pet_id IS NULL OR i.retired_at IS NOT NULL AS created) c
  WHERE c.created OR ($1 AND i.quantity <> s.quantity)`;
/**
 * The creations' events and the others' were staged apart, creations first: one numbering in
 * petId order, as every import's events are in the log, whatever mix of writes it made.
 */
const ORDER_EVENTS = `UPDATE import_events e SET ord = r.n
  FROM (SELECT pet_id, row_number() OVER (ORDER BY pet_id) AS n FROM import_events) r WHERE e.pet_id = r.pet_id`;
/**
 * With the bump of store_state, last as in every write: the staged events take the seqs after the
 * head, in the same update (see CHANGE_BATCH), and the NOTIFY ($3) goes with it. $1: how many, $2: when.
 */
const APPEND_EVENTS = `e AS (INSERT INTO inventory_events
      (seq, type, occurred_at, pet_id, status, previous_quantity, quantity, version, reason, source, key_id, request_id)
    SELECT s.events_head - $1::bigint + e.ord, e.type, $2::timestamptz, e.pet_id, e.status, e.previous_quantity, e.quantity, e.version, e.reason,
      'cli', NULL, NULL
    FROM import_events e, s)`;
const BUMP_RETURNING = 'RETURNING version, events_head, pg_notify($3, events_head::text)';
/**
 * A few entries written: they carry WRITING until the store version, bumped last as in every
 * write, is known, and then that version. Many: readers are told to read the whole list again
 * (reload_from), which spares an update of every row written.
 */
const WRITING = -1;
const STAMP_WRITTEN = `WITH s AS (UPDATE store_state SET version = version + 1, events_head = events_head + $1::bigint WHERE id = 1 ${BUMP_RETURNING}),
  ${APPEND_EVENTS}
  UPDATE inventory SET change_seq = s.version FROM s WHERE change_seq = ${WRITING}`;
const BUMP_FOR_RELOAD = `WITH s AS (UPDATE store_state SET version = version + 1, reload_from = version + 1, events_head = events_head + $1::bigint WHERE id = 1
    ${BUMP_RETURNING}),
  ${APPEND_EVENTS}
  SELECT 1`;

type Query = <R extends QueryResultRow>(text: string, values?: unknown[]) => Promise<R[]>;

/**
 * The PostgreSQL store's import, in one transaction on one connection of its own (behind a
 * pooler, nothing outlives a transaction): each batch goes into a temporary table by COPY, the
 * next batch read while one is copied; then, under a savepoint, the entries in the way are
 * locked, the conflicts looked for, and the rows written. A petId the file repeats is looked for
 * before an upsert (an update would take one of the rows at random); a creation finds it by the
 * primary key refusing the insert, and only then, back at the savepoint, looks for every problem.
 * No request waits on these statements and a million rows take seconds, so they run under
 * BULK_STATEMENT_TIMEOUT_MS, not the store timeout; the transaction may wait as long on the
 * source between batches.
 */
export async function importItems(pool: StorePool, source: ImportSource, plan: ImportPlan, channel: string): Promise<ImportOutcome> {
  const client = await pool.connect();
  // A connection dropping between statements fails the next one; unhandled, the event would kill the process.
  client.on('error', ignore);
  const query: Query = async <R extends QueryResultRow>(text: string, values: unknown[] = []) =>
    (await client.query<R>({ text, values, query_timeout: BULK_STATEMENT_TIMEOUT_MS + QUERY_TIMEOUT_GRACE_MS } as QueryConfig)).rows;
  try {
    await query(beginStatement({ ...pool.settings, statementTimeoutMs: BULK_STATEMENT_TIMEOUT_MS, idleInTransactionTimeoutMs: BULK_STATEMENT_TIMEOUT_MS }));
    await query(CREATE_STAGING);
    await query(CREATE_EVENTS);
    const staged = await stage(client, source);
    plan.onPhase?.('checking');
    // Temporary tables get no statistics of their own: without these the planner guesses a size.
    await query('ANALYZE import_rows');
    const outcome = await checkAndWrite(query, source, plan, staged, channel);
    // Nothing written when refused: the staging tables go either way.
    await query(outcome.applied ? 'COMMIT' : 'ROLLBACK');
    return outcome;
  } finally {
    // Dropped, not reused: after a failure the transaction is still open, and dropping the connection rolls it back.
    client.off('error', ignore);
    client.release(true);
  }
}

/** The checks, then the write under a savepoint, within the import's transaction. */
async function checkAndWrite(query: Query, source: ImportSource, plan: ImportPlan, staged: number, channel: string): Promise<ImportOutcome> {
  const diagnose = async () => {
    const repeats = await findRepeats(query, plan.conflictsMax);
    if (repeats.count > 0) await query(DROP_REPEATS);
    return refusal(repeats, await findConflicts(query, plan), plan.conflictsMax);
  };
  // Refused already: the checks only add to the list, so they need no lock.
  if (source.refused() > 0) return diagnose();
  if (plan.upsert && (await countRepeats(query)) > 0) return diagnose();
  try {
    return await underSavepoint(query, async () => {
      // Checked before anything is written, then again once the entries in the way are locked.
      if ((await findConflicts(query, plan)).count > 0) throw new Refused();
      plan.onPhase?.('applying');
      return write(query, plan, staged, channel);
    });
  } catch (err) {
    // Refused, or a petId twice in the file (or one created meanwhile): rolled back to the savepoint; find every problem to list it.
    if (!(err instanceof Refused) && (err as { code?: unknown }).code !== UNIQUE_VIOLATION) throw err;
    const outcome = await diagnose();
    if (outcome.applied || outcome.conflictRows === 0) throw err;
    return outcome;
  }
}

const UNIQUE_VIOLATION = '23505';

/** The import is refused: the transaction is rolled back, and then every problem looked for. */
class Refused extends Error {
  constructor() {
    super('the import is refused');
    this.name = 'Refused';
  }
}

/** Copies every batch into the staging table, reading the next batch while one is copied; resolves to how many rows. */
async function stage(client: PoolClient, source: ImportSource): Promise<number> {
  let staged = 0;
  let copying: Promise<void> | undefined;
  try {
    for await (const rows of source.batches) {
      await copying;
      copying = copyBatch(client, rows, staged);
      // Awaited before the next batch or at the end; until then a failure must not count as unhandled.
      copying.catch(ignore);
      staged += rows.length;
    }
  } finally {
    // Settled before the connection is let go, whatever stopped the reading.
    await copying?.catch(ignore);
  }
  await copying;
  return staged;
}

async function copyBatch(client: PoolClient, rows: readonly ImportRow[], first: number): Promise<void> {
  const copy = client.query(copyFrom(COPY_STAGING));
  // The client's read timeout applies to a COPY too; a batch is milliseconds, but give it the bulk bound.
  Object.assign(copy, { query_timeout: BULK_STATEMENT_TIMEOUT_MS + QUERY_TIMEOUT_GRACE_MS });
  // COPY text format: tab-separated, \N for null; no value here needs escaping (numbers, and statuses from a closed set).
  copy.end(rows.map((r, i) => `${first + i}\t${r.line}\t${r.index ?? '\\N'}\t${r.item.petId}\t${r.item.quantity}\t${r.item.status}\n`).join(''));
  await finished(copy);
}

async function countRepeats(query: Query): Promise<number> {
  return Number((await query<{ n: string }>(REPEATS))[0]!.n);
}

async function findRepeats(query: Query, max: number): Promise<{ kept: ImportConflict[]; count: number }> {
  const count = await countRepeats(query);
  if (count === 0) return { kept: [], count };
  type Row = { line: bigint; item: bigint | null; petId: bigint; firstLine: bigint; firstItem: bigint | null };
  const rows = await query<Row>(FIRST_REPEATS, [max]);
  return { kept: rows.map((r) => ({ kind: 'duplicate', at: locationOf(r.line, r.item), petId: r.petId, first: locationOf(r.firstLine, r.firstItem) })), count };
}

async function findConflicts(query: Query, plan: ImportPlan): Promise<{ kept: ImportConflict[]; count: number }> {
  type Row = { line: bigint; item: bigint | null; petId: bigint; stored: PetStatus; given: PetStatus };
  const rows = await query<Row>(FIRST_CONFLICTS, [plan.upsert, plan.conflictsMax]);
  const kept = rows.map(({ line, item, petId, stored, given }): ImportConflict => {
    const at = locationOf(line, item);
    return plan.upsert ? { kind: 'status_differs', at, petId, stored, given } : { kind: 'exists', at, petId };
  });
  const count = rows.length < plan.conflictsMax ? rows.length : Number((await query<{ n: bigint }>(CONFLICT_COUNT, [plan.upsert]))[0]!.n);
  return { kept, count };
}

/**
 * The write itself. First the creations, which lock nothing a request waits for (a PATCH of a pet
 * without an entry is 404 and locks nothing); then, as late as the transaction allows, the entries
 * that were there are locked (a PATCH of one waits from here to the commit), checked again, and
 * their changes of quantity and revivals written, their events staged after the creations'; then
 * the store version and the events, last as in every write. Refused (thrown) when the checks under
 * the locks find a conflict an operator's command made meanwhile.
 */
async function write(query: Query, plan: ImportPlan, staged: number, channel: string): Promise<ImportOutcome> {
  // Read before any lock: the total only chooses how readers are told, and either way tells them right.
  const planned = plan.upsert ? (await query<{ created: bigint; updated: bigint }>(WRITES))[0]! : { created: staged, updated: 0 };
  const bulk = Number(planned.created) + Number(planned.updated) > BULK_WRITE;
  // Many: the rows' change_seq is never read (readers reload), so it costs no second pass over them.
  const seq = bulk ? 0 : WRITING;
  const at = plan.change.at.toISOString();
  const fresh = Number((await query<{ n: bigint }>(CREATE, [at, seq]))[0]!.n);
  if (fresh > 0) {
    await query(DROP_CREATED);
    // The planner would read the whole inventory for the staging table's old size.
    await query('ANALYZE import_rows');
  }
  const existing = Number((await query<{ n: bigint }>(LOCK_EXISTING))[0]!.n);
  // A conflict, or a repeat a revival would hide (it takes one of the rows of its petId, and the insert refuses no other).
  if (existing > 0 && (await findConflicts(query, plan)).count > 0) throw new Refused();
  if (!plan.upsert && existing > 0 && (await countRepeats(query)) > 0) throw new Refused();
  const counts = existing === 0 ? { created: 0n, updated: 0n } : (await query<{ created: bigint; updated: bigint }>(WRITES))[0]!;
  const revived = Number(counts.created);
  const updated = Number(counts.updated);
  if (revived + updated > 0) await query(STAGE_EVENTS, [plan.upsert, fresh]);
  if (fresh > 0 && revived + updated > 0) await query(ORDER_EVENTS);
  if (updated > 0) {
    const { keyId, keyName, requestId } = plan.change;
    await query(HISTORY, [at, keyId, keyName, requestId]);
    await query(UPDATE, [at, seq]);
  }
  if (revived > 0) await query(REVIVE, [at, seq]);
  const created = fresh + revived;
  const written = created + updated;
  if (written > 0) await query(bulk ? BUMP_FOR_RELOAD : STAMP_WRITTEN, [written, at, channel]);
  return { applied: true, created, updated, unchanged: staged - written };
}

/** `fn` under a savepoint, released when it returns; rolled back to when it throws, the staged rows kept. */
async function underSavepoint<T>(query: Query, fn: () => Promise<T>): Promise<T> {
  await query('SAVEPOINT import_write');
  let result: T;
  try {
    result = await fn();
  } catch (err) {
    // A ROLLBACK TO that fails leaves the transaction aborted: the diagnosis fails too, and the connection is dropped.
    await query('ROLLBACK TO SAVEPOINT import_write').catch(ignore);
    throw err;
  }
  await query('RELEASE SAVEPOINT import_write');
  return result;
}

/** The first conflicts of both kinds in file order, and how many rows were refused. */
function refusal(repeats: { kept: ImportConflict[]; count: number }, found: { kept: ImportConflict[]; count: number }, max: number): ImportOutcome {
  return { applied: false, conflicts: firstConflicts(repeats.kept, found.kept, max), conflictRows: repeats.count + found.count };
}

function ignore(): void {}
