import type Database from 'better-sqlite3';
import { firstConflicts, ImportStoppedError, locationOf, type ImportConflict, type Location, type ImportOutcome, type ImportPlan, type ImportRow, type ImportSource } from '../../domain/import.js';
import type { PetStatus } from '../../schemas/inventory.js';
import { INT64_MAX, INT64_MIN } from '../../domain/pet-id.js';
import { BULK_WRITE } from '../store.js';
import { reasonSql, writesChangeSql, type FactsSql } from '../write-kinds-sql.js';
import { appendEvents, changeLog, insertHistory } from './change-log.js';
import { inWriteLock, LOCK_RETRY_MS } from './write-lock.js';

type ConflictRow = [line: bigint, index: bigint | null, petId: bigint, stored: string, given: string];

/** A staged row (s) and the entry of its petId (i), if any, as the facts of the write the import makes of it. */
const STAGED: FactsSql = { at: ':at', petId: 's.pet_id', status: 's.status', before: 'i.quantity', after: 's.quantity', version: 'coalesce(i.version + 1, 1)' };
/** A staged row whose entry the import creates (none) or revives (retired): a creation. */
const CREATES = 'i.pet_id IS NULL OR i.retired_at IS NOT NULL';
/** A staged row whose entry the import counts, live: its count written only when the no-op rule (domain writesChange) says. */
const COUNTS = `i.retired_at IS NULL AND ${writesChangeSql('imported', 'i.quantity', 's.quantity')}`;

/**
 * The SQLite store's import: batches staged in a temporary table on this connection (keyed by
 * petId, so a petId twice is caught as it is staged, and the table is read in petId order), each
 * batch one transaction of its own; then the checks of every row in one read transaction, and the
 * write in chunks of IMPORT_CHUNK staged rows in petId order, each an IMMEDIATE transaction of
 * its own that checks its rows again under the write lock (decisions 5.8). SQLite has one write
 * lock for the whole file: a single transaction for a million rows would hold it for seconds, and
 * the server's writes, which wait BUSY_TIMEOUT_MS for it, would fail meanwhile. The staging table
 * lives in SQLite's temporary database, which spills to a file, not in memory.
 */
export function importItems(db: Database.Database, source: ImportSource, plan: ImportPlan): Promise<ImportOutcome> {
  let importer = importers.get(db);
  if (!importer) importers.set(db, (importer = importerOn(db)));
  return importer(source, plan);
}

/**
 * Staged rows written per transaction: a fraction of a second under the write lock, and no more
 * than BULK_WRITE, so the change log names the pets each chunk wrote and a server's list follows
 * them without reading the whole list again.
 */
export const IMPORT_CHUNK = BULK_WRITE;

/**
 * How long the import leaves the write lock free after each chunk: a server's writer waiting for
 * it tries every LOCK_RETRY_MS (write-lock.ts), so it takes the lock in this gap, and a PATCH sent
 * during an import waits for about one chunk, not for the whole import.
 */
const HANDOFF_MS = 2 * LOCK_RETRY_MS;

/** Rows staged by one statement (the rest of a batch one at a time): 5 parameters each, far below SQLite's limit. */
const STAGE_ROWS = 100;

/** The insert of `rows` staged rows; a petId staged already is passed over (its row counts as a duplicate). */
function stageSql(rows: number): string {
  return `INSERT INTO temp.import_rows (pet_id, line, item, quantity, status) VALUES ${Array<string>(rows).fill('(?, ?, ?, ?, ?)').join(', ')}
    ON CONFLICT (pet_id) DO NOTHING`;
}

/** The petIds from and up to which one chunk writes (both included). */
interface Chunk {
  from: bigint;
  upto: bigint;
}

/** Every staged row at once: for the checks before the first chunk. */
const EVERY_ROW: Chunk = { from: INT64_MIN, upto: INT64_MAX };

type Importer = (source: ImportSource, plan: ImportPlan) => Promise<ImportOutcome>;

/** Made at a connection's first import (its staging table and statements), then reused by every import on it. */
const importers = new WeakMap<Database.Database, Importer>();

function importerOn(db: Database.Database): Importer {
  const log = changeLog(db);
  db.exec(`CREATE TEMP TABLE IF NOT EXISTS import_rows (
    pet_id INTEGER PRIMARY KEY, line INTEGER NOT NULL, item INTEGER, quantity INTEGER NOT NULL, status TEXT NOT NULL
  ) STRICT`);
  const safe = (sql: string) => db.prepare(sql).raw(true).safeIntegers(true);
  const stmt = {
    clear: db.prepare('DELETE FROM temp.import_rows'),
    stage: db.prepare(stageSql(1)),
    // STAGE_ROWS rows a statement: one call and one bind a row cost more than the insert itself.
    stageRows: db.prepare(stageSql(STAGE_ROWS)),
    stagedAt: safe('SELECT line, item FROM temp.import_rows WHERE pet_id = ?'),
    staged: db.prepare('SELECT count(*) FROM temp.import_rows WHERE pet_id BETWEEN :from AND :upto').pluck(),
    // A chunk's bounds, found by seeks on the table's key (petId, its rowid) rather than by numbering every row: the
    // first staged petId, the first after one, and the last of the IMPORT_CHUNK rows from one.
    firstStaged: safe('SELECT min(pet_id) FROM temp.import_rows').pluck(),
    firstAfter: safe('SELECT pet_id FROM temp.import_rows WHERE pet_id > ? ORDER BY pet_id LIMIT 1').pluck(),
    lastOfChunk: safe(`SELECT max(pet_id) FROM (SELECT pet_id FROM temp.import_rows WHERE pet_id >= ? ORDER BY pet_id LIMIT ${IMPORT_CHUNK})`).pluck(),
    // Rows whose entry exists; with upsert only those whose status differs. The first ones in file order, and how many.
    // (:limit + 0), not a bare :limit, as LIMIT in connection.ts says why.
    conflicts: safe(
      `SELECT s.line, s.item, s.pet_id, i.status, s.status FROM temp.import_rows s JOIN inventory i ON i.pet_id = s.pet_id
       WHERE s.pet_id BETWEEN :from AND :upto AND i.retired_at IS NULL AND (:upsert = 0 OR i.status <> s.status) ORDER BY s.line, s.item LIMIT (:limit + 0)`,
    ),
    conflictCount: db
      .prepare(
        `SELECT count(*) FROM temp.import_rows s JOIN inventory i ON i.pet_id = s.pet_id
         WHERE s.pet_id BETWEEN :from AND :upto AND i.retired_at IS NULL AND (:upsert = 0 OR i.status <> s.status)`,
      )
      .pluck(),
    lastHistoryId: db.prepare('SELECT coalesce(max(id), 0) FROM inventory_history').pluck().safeIntegers(true),
    // Each change of quantity, chained to the pet's previous row, as a PATCH writes it.
    history: db.prepare(
      insertHistory(`SELECT i.pet_id, i.quantity, s.quantity, :at, :keyId, :keyName, :requestId, ${reasonSql('imported')}, i.last_history_id
       FROM temp.import_rows s JOIN inventory i ON i.pet_id = s.pet_id
       WHERE s.pet_id BETWEEN :from AND :upto AND ${COUNTS} ORDER BY s.pet_id`),
    ),
    // The rows history just wrote (ids past `after`) carry the new quantities and link the entries to them.
    update: db.prepare(
      `UPDATE inventory SET quantity = h.quantity, version = version + 1, updated_at = :at, last_history_id = h.id
       FROM (SELECT id, pet_id, quantity FROM inventory_history WHERE id > :after) AS h WHERE inventory.pet_id = h.pet_id`,
    ),
    // The event of every entry the import will write, before it writes them (a revival is a creation), in petId order, with the seqs after
    // the head: under the write lock none else is handed out until the import commits. The same rows as the writes below.
    events: db.prepare(
      appendEvents(
        '(SELECT events_head FROM store_state WHERE id = 1) + row_number() OVER (ORDER BY s.pet_id)',
        { when: CREATES, kind: 'created', otherwise: 'imported' },
        STAGED,
        `temp.import_rows s LEFT JOIN inventory i ON i.pet_id = s.pet_id
         WHERE s.pet_id BETWEEN :from AND :upto AND (${CREATES} OR (:upsert = 1 AND ${COUNTS})) ORDER BY s.pet_id`,
      ),
    ),
    revive: db.prepare(
      `UPDATE inventory SET quantity = s.quantity, status = s.status, retired_at = NULL, version = version + 1, updated_at = :at
       FROM temp.import_rows s WHERE s.pet_id BETWEEN :from AND :upto AND inventory.pet_id = s.pet_id AND inventory.retired_at IS NOT NULL`,
    ),
    create: db.prepare(
      `INSERT INTO inventory (pet_id, quantity, status, created_at, updated_at)
       SELECT pet_id, quantity, status, :at, :at FROM temp.import_rows s
       WHERE s.pet_id BETWEEN :from AND :upto AND NOT EXISTS (SELECT 1 FROM inventory i WHERE i.pet_id = s.pet_id)`,
    ),
    // What this chunk wrote: the pets of the events it appended (one per entry written, in petId order), read before the
    // change log moves the head past them. Not the entries stamped with its time: another write of the same millisecond
    // would be among them, and changesSince would report an entry the import left alone.
    written: db
      .prepare('SELECT pet_id FROM inventory_events WHERE seq > (SELECT events_head FROM store_state WHERE id = 1) ORDER BY seq')
      .pluck()
      .safeIntegers(true),
  };

  /** Where the row that staged `petId` is in the file. */
  const stagedAt = (petId: bigint): Location => locationOf(...(stmt.stagedAt.get(petId) as [bigint, bigint | null]));
  /** Stages one row; a petId staged before (by an earlier row) is a duplicate. */
  const stageRow = (row: ImportRow, duplicates: Duplicates): void => {
    const { petId, quantity, status } = row.item;
    if (stmt.stage.run(petId, row.line, row.index ?? null, quantity, status).changes === 0) duplicate(row, duplicates);
  };
  /** A row whose petId an earlier row staged (at `first`, read when not given): counted, and kept while the list has room. */
  const duplicate = (row: ImportRow, duplicates: Duplicates, first?: Location): void => {
    duplicates.count++;
    if (duplicates.kept.length < duplicates.max) {
      duplicates.kept.push({ kind: 'duplicate', at: locationOf(row.line, row.index), petId: row.item.petId, first: first ?? stagedAt(row.item.petId) });
    }
  };
  const group: unknown[] = new Array<unknown>(STAGE_ROWS * 5);
  const stageBatch = db.transaction((rows: readonly ImportRow[], duplicates: Duplicates) => {
    let at = 0;
    for (; at + STAGE_ROWS <= rows.length; at += STAGE_ROWS) {
      for (let k = 0; k < STAGE_ROWS; k++) {
        const row = rows[at + k]!;
        const o = k * 5;
        group[o] = row.item.petId;
        group[o + 1] = row.line;
        group[o + 2] = row.index ?? null;
        group[o + 3] = row.item.quantity;
        group[o + 4] = row.item.status;
      }
      if (stmt.stageRows.run(group).changes === STAGE_ROWS) continue;
      // Some petId of the group was staged before, or twice in it: in file order, a row whose petId is staged at another
      // place is the duplicate (the first row of a petId is the one the insert kept).
      for (let k = 0; k < STAGE_ROWS; k++) {
        const row = rows[at + k]!;
        const first = stagedAt(row.item.petId);
        if (first.line !== row.line || first.index !== row.index) duplicate(row, duplicates, first);
      }
    }
    for (; at < rows.length; at++) stageRow(rows[at]!, duplicates);
  });

  /** The chunks of the staged rows, IMPORT_CHUNK rows each, in petId order: their first and last petIds. */
  const chunksOf = (): Chunk[] => {
    const chunks: Chunk[] = [];
    let from = (stmt.firstStaged.get() as bigint | null) ?? undefined;
    while (from !== undefined) {
      const upto = stmt.lastOfChunk.get(from) as bigint;
      chunks.push({ from, upto });
      from = stmt.firstAfter.get(upto) as bigint | undefined;
    }
    return chunks;
  };

  /** The entries of `chunk` that stand in the way. */
  const conflicts = (plan: ImportPlan, chunk: Chunk = EVERY_ROW): { kept: ImportConflict[]; count: number } => {
    const params = { upsert: plan.upsert ? 1 : 0, limit: plan.conflictsMax, ...chunk };
    const rows = stmt.conflicts.all(params) as ConflictRow[];
    const kept = rows.map(([line, index, petId, stored, given]): ImportConflict => {
      const at = locationOf(line, index);
      return plan.upsert ? { kind: 'status_differs', at, petId, stored: stored as PetStatus, given: given as PetStatus } : { kind: 'exists', at, petId };
    });
    return { kept, count: rows.length < plan.conflictsMax ? rows.length : Number(stmt.conflictCount.get({ upsert: params.upsert, ...chunk })) };
  };

  /**
   * One chunk, under the write lock: its rows checked again (an operator's command may have created,
   * retired or revived one of its entries since the checks), then written. What it wrote, or the
   * conflicts that stopped it, nothing of it written.
   */
  const applyChunk = db.transaction((plan: ImportPlan, chunk: Chunk): Written | { kept: ImportConflict[]; count: number } => {
    const found = conflicts(plan, chunk);
    if (found.count > 0) return found;
    const { at: when, ...who } = plan.change;
    const at = when.toISOString();
    const staged = Number(stmt.staged.get(chunk));
    const events = stmt.events.run({ at, upsert: plan.upsert ? 1 : 0, ...chunk }).changes;
    let updated = 0;
    if (plan.upsert) {
      const after = stmt.lastHistoryId.get() as bigint;
      updated = stmt.history.run({ at, ...who, ...chunk }).changes;
      if (updated > 0) stmt.update.run({ at, after });
    }
    const created = stmt.revive.run({ at, ...chunk }).changes + stmt.create.run({ at, ...chunk }).changes;
    const written = created + updated;
    if (written > BULK_WRITE) log.commit('bulk', events);
    else if (written > 0) log.commit(stmt.written.all() as bigint[], events);
    return { created, updated, unchanged: staged - written };
  });

  /** Every chunk in petId order; refused, with nothing written, if the checks or the first chunk find conflicts. */
  const apply = async (plan: ImportPlan, duplicates: Duplicates): Promise<ImportOutcome> => {
    // A read transaction: every row checked against one snapshot, without the write lock.
    const found = db.transaction(() => conflicts(plan))();
    if (found.count > 0) return refusal(duplicates, found, plan.conflictsMax);
    plan.onPhase?.('applying');
    const chunks = chunksOf();
    const done: Written = { created: 0, updated: 0, unchanged: 0 };
    for (const [n, chunk] of chunks.entries()) {
      if (n > 0) await new Promise((handedOver) => setTimeout(handedOver, HANDOFF_MS));
      let result: ReturnType<typeof applyChunk>;
      try {
        result = inWriteLock(db, () => applyChunk(plan, chunk));
      } catch (err) {
        if (n === 0) throw err;
        throw new ImportStoppedError(done, err);
      }
      if ('count' in result) {
        if (n === 0) return refusal(duplicates, result, plan.conflictsMax);
        throw new ImportStoppedError(done, new Error(`${result.count} of its entries changed meanwhile (created, retired or revived by another command)`));
      }
      done.created += result.created;
      done.updated += result.updated;
      done.unchanged += result.unchanged;
    }
    return { applied: true, ...done };
  };

  return async (source, plan) => {
    stmt.clear.run();
    try {
      const duplicates: Duplicates = { kept: [], count: 0, max: plan.conflictsMax };
      for await (const rows of source.batches) stageBatch(rows, duplicates);
      plan.onPhase?.('checking');
      const refused = source.refused();
      // Refused already: the checks only add to the list, so they need no lock.
      if (refused > 0 || duplicates.count > 0) return db.transaction(() => refusal(duplicates, conflicts(plan), plan.conflictsMax))();
      return await apply(plan, duplicates);
    } finally {
      stmt.clear.run();
    }
  };
}

interface Written {
  created: number;
  updated: number;
  unchanged: number;
}

interface Duplicates {
  kept: ImportConflict[];
  count: number;
  max: number;
}

/** The first conflicts of both kinds in file order, and how many rows were refused. */
function refusal(duplicates: Duplicates, found: { kept: ImportConflict[]; count: number }, max: number): ImportOutcome {
  return { applied: false, conflicts: firstConflicts(duplicates.kept, found.kept, max), conflictRows: duplicates.count + found.count };
}
