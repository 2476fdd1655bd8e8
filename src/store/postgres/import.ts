import { finished } from 'node:stream/promises';
import type { PoolClient, QueryResultRow } from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { firstConflicts, locationOf, type ImportConflict, type ImportOutcome, type ImportPlan, type ImportRow, type ImportSource } from '../../domain/import.js';
import type { PetStatus } from '../../schemas/inventory.js';
import { BULK_WRITE } from '../store.js';
import { reasonSql, writesChangeSql } from '../write-kinds-sql.js';
import { appendEvents, bumpStoreState, insertHistory } from './change-log.js';
import { BULK_READ_TIMEOUT_MS, inBulkTransaction } from './bulk.js';
import type { StorePool } from './connection.js';

/**
 * The staging table: a temporary one, which writes no WAL, dropped with the import's transaction
 * (a pooler may hand the server connection to another client right after).
 */
const CREATE_STAGING = `CREATE TEMP TABLE import_rows (
  seq bigint NOT NULL, line bigint NOT NULL, item bigint, pet_id bigint NOT NULL, quantity integer NOT NULL, status text NOT NULL) ON COMMIT DROP`;
const COPY_STAGING = 'COPY import_rows (seq, line, item, pet_id, quantity, status) FROM STDIN';
/**
 * The writes of the import whose events it appends, staged before the writes (they need the entries
 * as they were), numbered 1.. in petId order: each a creation or a stocktake's count (domain write
 * kinds created and imported), with the facts its event is made of at the append.
 */
const CREATE_EVENTS = `CREATE TEMP TABLE import_events (
  ord bigint NOT NULL, created boolean NOT NULL, pet_id bigint NOT NULL, status text NOT NULL, before integer, after integer NOT NULL,
  version bigint NOT NULL) ON COMMIT DROP`;

/**
 * The staged rows whose petId has an entry, live or retired, read before any lock: once the new
 * entries are created, everything the import does under the locks reads only these, not the file.
 * `ord`: the row's place among the file's rows in petId order, its file order when the file is
 * sorted (else set by NUMBER_AND_STAGE_CREATED), so that its event fits between the creations'.
 */
const STAGE_EXISTING = `CREATE TEMP TABLE import_existing ON COMMIT DROP AS
  SELECT s.*, s.seq + 1 AS ord FROM import_rows s WHERE EXISTS (SELECT 1 FROM inventory i WHERE i.pet_id = s.pet_id)`;
/** The staging table a check reads: every row of the file, or (under the locks) those of entries that were there. */
type Staged = 'import_rows' | 'import_existing';

/** How many rows repeat a petId of an earlier row. */
const REPEATS = (rows: Staged) => `SELECT coalesce(sum(n - 1), 0) AS n FROM (SELECT count(*) AS n FROM ${rows} GROUP BY pet_id HAVING count(*) > 1) d`;
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
const FIRST_CONFLICTS = (rows: Staged) => `SELECT s.line, s.item, s.pet_id AS "petId", i.status AS stored, s.status AS given
  FROM ${rows} s JOIN inventory i ON i.pet_id = s.pet_id WHERE ${CONFLICTS_WHERE} ORDER BY s.seq LIMIT $2`;
const CONFLICT_COUNT = (rows: Staged) => `SELECT count(*) AS n FROM ${rows} s JOIN inventory i ON i.pet_id = s.pet_id WHERE ${CONFLICTS_WHERE}`;

/** Locks the entries the import may write, in petId order as every write does, so it cannot deadlock with a batch of changes. */
const LOCK_EXISTING = `SELECT count(*) AS n FROM (SELECT 1 FROM inventory i WHERE i.pet_id IN (SELECT pet_id FROM import_existing)
  ORDER BY i.pet_id FOR UPDATE) l`;
/** A staged row (s) whose entry (i) the import creates (none) or revives (retired): a creation. */
const CREATES = 'i.pet_id IS NULL OR i.retired_at IS NOT NULL';
/** A staged row whose entry the import counts, live: its count written only when the no-op rule (domain writesChange) says. */
const COUNTS = `i.retired_at IS NULL AND ${writesChangeSql('imported', 'i.quantity', 's.quantity')}`;
/** What an import does to the entries that were there; with its creations, the total decides how the store version tells readers. */
const WRITES = `SELECT count(*) FILTER (WHERE ${CREATES}) AS created, count(*) FILTER (WHERE ${COUNTS}) AS updated
  FROM import_existing s LEFT JOIN inventory i ON i.pet_id = s.pet_id`;
/** Each change of quantity, as a PATCH writes it, with the reason of a stocktake's. */
const HISTORY = insertHistory(`SELECT i.pet_id, i.quantity, s.quantity, $1, $2, $3, $4, ${reasonSql('imported')}
  FROM import_existing s JOIN inventory i ON i.pet_id = s.pet_id WHERE ${COUNTS} ORDER BY i.pet_id`);
const UPDATE = `UPDATE inventory i SET quantity = s.quantity, version = i.version + 1, updated_at = $1, change_seq = $2
  FROM import_existing s WHERE i.pet_id = s.pet_id AND ${COUNTS}`;
const REVIVE = `UPDATE inventory i SET quantity = s.quantity, status = s.status, retired_at = NULL, version = i.version + 1,
    updated_at = $1, change_seq = $2
  FROM import_existing s WHERE i.pet_id = s.pet_id AND i.retired_at IS NOT NULL`;
/** The staged rows of petIds no entry had: the import's new entries, and their events. */
const NEW_ROWS = 'import_rows s WHERE NOT EXISTS (SELECT 1 FROM import_existing x WHERE x.pet_id = s.pet_id)';
/**
 * The new entries, which lock nothing a request waits for. In file order: sorting a million rows
 * costs more than the index gains from sorted keys (an export is sorted already). An entry
 * created meanwhile by another command makes the primary key refuse the insert.
 */
const CREATE = `INSERT INTO inventory (pet_id, quantity, status, created_at, updated_at, change_seq)
  SELECT s.pet_id, s.quantity, s.status, $1, $1, $2 FROM ${NEW_ROWS}`;
/** A new entry's write (its version is 1), as columns of import_events; `ord` is given apart. */
const CREATED_WRITE = 'true AS created, s.pet_id, s.status, NULL::integer AS before, s.quantity AS after, 1::bigint AS version';
/**
 * The new entries' events, each at its row's place among the file's in petId order, leaving the
 * places of the rows of entries that were there to their events: of a file in petId order, that
 * place is the file order; else every row is numbered once (import_existing's too).
 */
const STAGE_CREATED = `INSERT INTO import_events (ord, created, pet_id, status, before, after, version)
  SELECT s.seq + 1, ${CREATED_WRITE} FROM ${NEW_ROWS}`;
const NUMBER_AND_STAGE_CREATED = `WITH n AS MATERIALIZED (SELECT s.*, row_number() OVER (ORDER BY s.pet_id) AS ord FROM import_rows s),
  x AS (UPDATE import_existing x SET ord = n.ord FROM n WHERE n.pet_id = x.pet_id)
  INSERT INTO import_events (ord, created, pet_id, status, before, after, version)
  SELECT s.ord, ${CREATED_WRITE} FROM n s WHERE NOT EXISTS (SELECT 1 FROM import_existing x WHERE x.pet_id = s.pet_id)`;
/**
 * An import that only creates, of a file in petId order: each staged row is an event, its file
 * order (seq, from 0) its place. Read at the append, so nothing is staged twice.
 */
const CREATED_IN_FILE_ORDER = `(SELECT s.seq + 1 AS ord, ${CREATED_WRITE} FROM import_rows s)`;
/**
 * The write of every entry that was there and the import will write (a revival is a creation), with
 * the version the write will give it, at `ord`: the same rules as the writes above ($1: upsert).
 * An entry the import created has the file's quantity, so none is here.
 */
const STAGE_EVENTS = (ord: string) => `INSERT INTO import_events (ord, created, pet_id, status, before, after, version)
  SELECT ${ord}, c.created, s.pet_id, s.status, i.quantity, s.quantity, coalesce(i.version + 1, 1)
  FROM import_existing s LEFT JOIN inventory i ON i.pet_id = s.pet_id, LATERAL (SELECT ${CREATES} AS created) c
  WHERE c.created OR ($1 AND ${COUNTS})`;
/** With the creations: each event at the place its row was given. Alone: numbered 1.. in petId order. */
const EXISTING_ORD = { withCreations: 's.ord', alone: 'row_number() OVER (ORDER BY s.pet_id)' } as const;
/**
 * Creations and entries that were there, some of which the import leaves as they are: their
 * places are gaps, so the events are numbered again, in petId order, as every import's are in the log.
 */
const ORDER_EVENTS = `UPDATE import_events e SET ord = r.n
  FROM (SELECT pet_id, row_number() OVER (ORDER BY pet_id) AS n FROM import_events) r WHERE e.pet_id = r.pet_id`;
/**
 * With the bump of store_state, last as in every write: the staged writes' events take the seqs
 * after the head, in the same update (change-log.ts), and the NOTIFY ($3) goes with it. $1: how many, $2: when.
 */
const APPEND_EVENTS = (events: string) =>
  `e AS (${appendEvents(
    's.events_head - $1::bigint + e.ord',
    { when: 'e.created', kind: 'created', otherwise: 'imported' },
    { at: '$2::timestamptz', petId: 'e.pet_id', status: 'e.status', before: 'e.before', after: 'e.after', version: 'e.version' },
    `${events} e, s`,
  )})`;
const BUMP = { count: '$1::bigint', notify: '$3' };
/**
 * A few entries written: they carry WRITING until the store version, bumped last as in every
 * write, is known, and then that version. Many: readers are told to read the whole list again
 * (reload_from), which spares an update of every row written.
 */
const WRITING = -1;
const STAMP_WRITTEN = (events: string) => `WITH s AS (${bumpStoreState(BUMP)}),
  ${APPEND_EVENTS(events)}
  UPDATE inventory SET change_seq = s.version FROM s WHERE change_seq = ${WRITING}`;
const BUMP_FOR_RELOAD = (events: string) => `WITH s AS (${bumpStoreState(BUMP, { reload: true })}),
  ${APPEND_EVENTS(events)}
  SELECT 1`;

type Query = <R extends QueryResultRow>(text: string, values?: unknown[]) => Promise<R[]>;
/** A statement's count of rows written (or selected into a table). */
type Run = (text: string, values?: unknown[]) => Promise<number>;

/** What the staging table holds: how many rows, and whether their petIds ascend in file order (as an export's do). */
interface Staging {
  rows: number;
  sorted: boolean;
}

/**
 * The PostgreSQL store's import, in one transaction on one connection of its own (behind a
 * pooler, nothing outlives a transaction): each batch goes into a temporary table by COPY, the
 * next batch read while one is copied; then, under a savepoint, the rows of entries that exist
 * are set apart, the conflicts looked for, and the rows written. A petId the file repeats is
 * looked for before an upsert (an update would take one of the rows at random); a creation
 * finds it by the primary key refusing the insert, and only then, back at the savepoint, looks
 * for every problem. No request waits on these statements and a million rows take seconds: a
 * bulk transaction (bulk.ts), which may also wait that long on the source between batches.
 */
export function importItems(pool: StorePool, source: ImportSource, plan: ImportPlan, channel: string): Promise<ImportOutcome> {
  return inBulkTransaction(pool, {
    async run(query, client) {
      const sql: Sql = {
        query: async <R extends QueryResultRow>(text: string, values?: unknown[]) => (await query<R>(text, values)).rows,
        run: async (text, values) => (await query(text, values)).rowCount ?? 0,
      };
      await sql.query(CREATE_STAGING);
      await sql.query(CREATE_EVENTS);
      const staged = await stage(client, source);
      plan.onPhase?.('checking');
      // Temporary tables get no statistics of their own: without these the planner guesses a size.
      await sql.query('ANALYZE import_rows');
      return checkAndWrite(sql, source, plan, staged, channel);
    },
    // Nothing written when refused: the staging tables go either way.
    keep: (outcome) => outcome.applied,
  });
}

/** The import's statements: their rows, or how many rows they wrote. */
interface Sql {
  query: Query;
  run: Run;
}

/** The checks, then the write under a savepoint, within the import's transaction. */
async function checkAndWrite(sql: Sql, source: ImportSource, plan: ImportPlan, staged: Staging, channel: string): Promise<ImportOutcome> {
  const { query } = sql;
  const diagnose = async () => {
    const repeats = await findRepeats(query, plan.conflictsMax);
    if (repeats.count > 0) await query(DROP_REPEATS);
    return refusal(repeats, await findConflicts(query, plan, 'import_rows'), plan.conflictsMax);
  };
  // Refused already: the checks only add to the list, so they need no lock.
  if (source.refused() > 0) return diagnose();
  if (plan.upsert && (await countRepeats(query, 'import_rows')) > 0) return diagnose();
  // A second try only after an entry created meanwhile met a creation: it then counts as one that was there.
  for (let attempt = 1; ; attempt++) {
    try {
      return await underSavepoint(query, () => write(sql, plan, staged, channel));
    } catch (err) {
      // Refused, or a petId twice in the file (or one created meanwhile): rolled back to the savepoint; find every problem to list it.
      if (!(err instanceof Refused) && (err as { code?: unknown }).code !== UNIQUE_VIOLATION) throw err;
      const outcome = await diagnose();
      if (outcome.applied) throw err;
      if (outcome.conflictRows > 0) return outcome;
      if (!plan.upsert || attempt > 1) throw err;
    }
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

/** Copies every batch into the staging table, reading the next batch while one is copied. */
async function stage(client: PoolClient, source: ImportSource): Promise<Staging> {
  let staged = 0;
  let sorted = true;
  let last: bigint | undefined;
  let copying: Promise<void> | undefined;
  try {
    for await (const rows of source.batches) {
      await copying;
      copying = copyBatch(client, rows, staged);
      // Awaited before the next batch or at the end; until then a failure must not count as unhandled.
      copying.catch(ignore);
      staged += rows.length;
      for (const { item } of rows) {
        if (last !== undefined && item.petId <= last) sorted = false;
        last = item.petId;
      }
    }
  } finally {
    // Settled before the connection is let go, whatever stopped the reading.
    await copying?.catch(ignore);
  }
  await copying;
  return { rows: staged, sorted };
}

async function copyBatch(client: PoolClient, rows: readonly ImportRow[], first: number): Promise<void> {
  const copy = client.query(copyFrom(COPY_STAGING));
  // The client's read timeout applies to a COPY too; a batch is milliseconds, but give it the bulk bound.
  Object.assign(copy, { query_timeout: BULK_READ_TIMEOUT_MS });
  // COPY text format: tab-separated, \N for null; no value here needs escaping (numbers, and statuses from a closed set).
  copy.end(rows.map((r, i) => `${first + i}\t${r.line}\t${r.index ?? '\\N'}\t${r.item.petId}\t${r.item.quantity}\t${r.item.status}\n`).join(''));
  await finished(copy);
}

async function countRepeats(query: Query, rows: Staged): Promise<number> {
  return Number((await query<{ n: string }>(REPEATS(rows)))[0]!.n);
}

async function findRepeats(query: Query, max: number): Promise<{ kept: ImportConflict[]; count: number }> {
  const count = await countRepeats(query, 'import_rows');
  if (count === 0) return { kept: [], count };
  type Row = { line: bigint; item: bigint | null; petId: bigint; firstLine: bigint; firstItem: bigint | null };
  const rows = await query<Row>(FIRST_REPEATS, [max]);
  return { kept: rows.map((r) => ({ kind: 'duplicate', at: locationOf(r.line, r.item), petId: r.petId, first: locationOf(r.firstLine, r.firstItem) })), count };
}

/** The conflicts among `rows`: every one is a row of an entry that exists, so import_existing holds them all once it is made. */
async function findConflicts(query: Query, plan: ImportPlan, rows: Staged): Promise<{ kept: ImportConflict[]; count: number }> {
  type Row = { line: bigint; item: bigint | null; petId: bigint; stored: PetStatus; given: PetStatus };
  const found = await query<Row>(FIRST_CONFLICTS(rows), [plan.upsert, plan.conflictsMax]);
  const kept = found.map(({ line, item, petId, stored, given }): ImportConflict => {
    const at = locationOf(line, item);
    return plan.upsert ? { kind: 'status_differs', at, petId, stored, given } : { kind: 'exists', at, petId };
  });
  const count = found.length < plan.conflictsMax ? found.length : Number((await query<{ n: bigint }>(CONFLICT_COUNT(rows), [plan.upsert]))[0]!.n);
  return { kept, count };
}

/** What the import does to the entries that were there (revivals count as created). */
async function writesToExisting(query: Query): Promise<{ created: number; updated: number }> {
  const [row] = await query<{ created: bigint; updated: bigint }>(WRITES);
  return { created: Number(row!.created), updated: Number(row!.updated) };
}

/**
 * The write itself. First the rows of entries that exist are set apart and checked, and the
 * creations made, which lock nothing a request waits for (a PATCH of a pet without an entry is 404
 * and locks nothing); then, as late as the transaction allows, the entries that were there are
 * locked (a PATCH of one waits from here to the commit), checked again, and their changes of
 * quantity and revivals written, their events staged after the creations'; then the store version
 * and the events, last as in every write. Refused (thrown) on a conflict, found before the locks
 * or under them (one an operator's command made meanwhile).
 */
async function write(sql: Sql, plan: ImportPlan, staged: Staging, channel: string): Promise<ImportOutcome> {
  const { query, run } = sql;
  const existing = await run(STAGE_EXISTING);
  // A temporary table has no statistics until analyzed; the statements below join this one to the inventory.
  if (existing > 0) await query('ANALYZE import_existing');
  // Checked before anything is written, then again once the entries in the way are locked.
  if (existing > 0 && (await findConflicts(query, plan, 'import_existing')).count > 0) throw new Refused();
  plan.onPhase?.('applying');
  // Read before any lock: the total only chooses how readers are told, and either way tells them right.
  const planned = existing > 0 ? await writesToExisting(query) : { created: 0, updated: 0 };
  const bulk = staged.rows - existing + planned.created + planned.updated > BULK_WRITE;
  // Many: the rows' change_seq is never read (readers reload), so it costs no second pass over them.
  const seq = bulk ? 0 : WRITING;
  const at = plan.change.at.toISOString();
  const fresh = existing < staged.rows ? await run(CREATE, [at, seq]) : 0;
  // Only creations, in petId order: the events are the staged rows as they are, read at the append.
  const inFileOrder = existing === 0 && staged.sorted;
  if (fresh > 0 && !inFileOrder) await query(staged.sorted ? STAGE_CREATED : NUMBER_AND_STAGE_CREATED);
  const locked = existing === 0 ? 0 : Number((await query<{ n: bigint }>(LOCK_EXISTING))[0]!.n);
  // A conflict, or a repeat a revival would hide (it takes one of the rows of its petId, and the insert refuses no other).
  if (locked > 0 && (await findConflicts(query, plan, 'import_existing')).count > 0) throw new Refused();
  if (!plan.upsert && locked > 0 && (await countRepeats(query, 'import_existing')) > 0) throw new Refused();
  const { created: revived, updated } = locked === 0 ? { created: 0, updated: 0 } : await writesToExisting(query);
  if (revived + updated > 0) await query(STAGE_EVENTS(fresh > 0 ? EXISTING_ORD.withCreations : EXISTING_ORD.alone), [plan.upsert]);
  // The places were all given before the locks: only a row left as it was leaves one empty.
  if (fresh > 0 && revived + updated < existing) await query(ORDER_EVENTS);
  if (updated > 0) {
    const { keyId, keyName, requestId } = plan.change;
    await query(HISTORY, [at, keyId, keyName, requestId]);
    await query(UPDATE, [at, seq]);
  }
  if (revived > 0) await query(REVIVE, [at, seq]);
  const created = fresh + revived;
  const written = created + updated;
  const events = inFileOrder ? CREATED_IN_FILE_ORDER : 'import_events';
  if (written > 0) await query(bulk ? BUMP_FOR_RELOAD(events) : STAMP_WRITTEN(events), [written, at, channel]);
  return { applied: true, created, updated, unchanged: staged.rows - written };
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
