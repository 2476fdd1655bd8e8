import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { StoreUnavailableError } from '../../errors.js';

/** How long a writer waits for another connection's lock before the request fails with 503. */
export const BUSY_TIMEOUT_MS = 5000;
/** How long a housekeeping write on the event loop's connection waits for the write lock (see briefly). */
export const MAINTENANCE_BUSY_TIMEOUT_MS = 100;

/**
 * The page size of a database this store creates (one that exists keeps its own). Why smaller than
 * SQLite's 4096: a PATCH rewrites one entry's page, and each commit appends every page it changed to
 * the WAL and waits for their fsync; a batch of changes to different pets writes a page per pet, so
 * the bytes a commit must make durable, and with them the fsync's wait, fall with the page.
 */
export const PAGE_SIZE = 1024;

/**
 * How a statement of this store takes a bound LIMIT: `LIMIT ${LIMIT}`, never a bare `LIMIT ?`.
 *
 * Why: SQLite's planner reads the value bound to a bare `LIMIT ?`, so it marks the statement to be
 * compiled again whenever another value is bound, which better-sqlite3 does at every call: a page
 * of events then cost about 15 µs more than its rows (SQLite 3.53; the event log is read after
 * every commit by each event stream's hub and each webhook endpoint). An expression it cannot read
 * while compiling keeps the compiled statement; the plans stay the same (EXPLAIN QUERY PLAN).
 */
export const LIMIT = '(? + 0)';

/** A bound LIMIT (or OFFSET) written bare, in any of SQLite's forms of parameter: what Connection.prepare refuses. */
const BARE_BOUND_LIMIT = /\b(?:LIMIT|OFFSET)\s+(?:\?\d*|[:@$][\w]+)/i;

/** `make` run once per connection, at its first call there: what it prepares is shared by every caller on that connection. */
export function perConnection<T>(make: (db: Database.Database) => T): (db: Database.Database) => T {
  const made = new WeakMap<Database.Database, T>();
  return (db) => {
    let value = made.get(db);
    if (value === undefined) made.set(db, (value = make(db)));
    return value;
  };
}

/** Every connection and statement this thread made, kept reachable until the thread exits (see Connection). */
const keptUntilExit: object[] = [];

/**
 * A better-sqlite3 connection whose objects (the connection and each statement it prepares) are
 * never garbage collected while the thread runs, and which refuses to prepare a bare bound LIMIT.
 *
 * Why: better-sqlite3 12 builds them on node::ObjectWrap, whose destructor, since Node 24.19,
 * removes an environment cleanup hook and aborts the process ("Assertion failed: (env) !=
 * nullptr") when V8 collects the object in a collection that runs with no context entered. Objects
 * still alive when the thread exits are freed by Node's own cleanup, which is safe. The store
 * prepares its statements once per connection, so keeping them costs nothing in a server; settings
 * go through exec(), which makes no statement object (pragma() would make one per call).
 * better-sqlite3 13 (Node-API) has no such destructor, but needs Node 22 or later.
 */
export class Connection extends Database {
  constructor(filename: string, options?: Database.Options) {
    super(filename, options);
    keptUntilExit.push(this);
  }

  // eslint-disable-next-line @typescript-eslint/no-empty-object-type -- better-sqlite3's own signature, kept so that every caller types as before
  override prepare<BindParameters extends unknown[] | {} = unknown[], Result = unknown>(source: string): Database.Statement<BindParameters, Result> {
    // Here, where every statement of the store is made, so SQL split over lines or built at run time is caught too,
    // by any test that prepares it; once per statement, never per request.
    if (BARE_BOUND_LIMIT.test(source)) throw new Error(`a bound LIMIT is written LIMIT ${LIMIT} in this store (connection.ts, LIMIT): ${source}`);
    const statement = super.prepare<BindParameters, Result>(source);
    keptUntilExit.push(statement);
    return statement;
  }
}

/** Opens (creating if needed) a connection with the settings every connection of the store uses. */
export function openSqliteConnection(filename: string): Connection {
  if (filename !== ':memory:') mkdirSync(dirname(filename), { recursive: true });
  const db = new Connection(filename);
  try {
    db.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
    // Before WAL mode: it takes effect only while the file is still empty.
    db.exec(`PRAGMA page_size = ${PAGE_SIZE}`);
    db.exec('PRAGMA journal_mode = WAL');
    // FULL: a commit is fsynced before it returns, so an acknowledged change survives a power loss.
    db.exec('PRAGMA synchronous = FULL');
    // Checkpoint every 4000 pages (4 MiB of PAGE_SIZE pages) rather than 1000: a page changed many times between checkpoints is copied once.
    db.exec('PRAGMA wal_autocheckpoint = 4000');
    db.exec('PRAGMA foreign_keys = ON');
  } catch (err) {
    db.close();
    throw err;
  }
  return db;
}

const SYNCHRONOUS = ['off', 'normal', 'full', 'extra'];

/** The settings that make this connection's commits durable, as SQLite reports them; prepares (and keeps) two statements, so not for every request. */
export function durabilityOf(db: Database.Database): Record<string, string> {
  const read = (name: string) => db.prepare(`PRAGMA ${name}`).pluck().get();
  const synchronous = Number(read('synchronous'));
  return { journal_mode: String(read('journal_mode')), synchronous: SYNCHRONOUS[synchronous] ?? String(synchronous) };
}

/** Lock contention past the busy timeout, or the disk failing: worth a retry (503), not a 500. */
export function isTransient(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' && /^SQLITE_(BUSY|LOCKED|IOERR|FULL|CANTOPEN|READONLY|PROTOCOL)/.test(code);
}

/** A transient failure as StoreUnavailableError (503); anything else as it is. */
export function asUnavailable<E>(err: E): E | StoreUnavailableError {
  return isTransient(err) ? new StoreUnavailableError('the SQLite store is busy or unavailable', { cause: err }) : err;
}

/** Runs a synchronous driver call on a connection of the store. */
export type Run = <T>(fn: () => T) => T;

/** How the ports run their calls on `db`: refused once it is closed, "cannot reach the store now" as StoreUnavailableError. */
export function runOn(db: Database.Database): Run {
  return (fn) => {
    if (!db.open) throw new StoreUnavailableError('the SQLite store is closed');
    try {
      return fn();
    } catch (err) {
      throw asUnavailable(err);
    }
  };
}

/** As `run`, for a write the writer commits: its rejection too is "cannot reach the store now" as StoreUnavailableError. */
export async function committed<T>(run: Run, write: () => Promise<T>): Promise<T> {
  try {
    return await run(write);
  } catch (err) {
    throw asUnavailable(err);
  }
}

/**
 * A housekeeping write on the event loop's connection, waiting at most MAINTENANCE_BUSY_TIMEOUT_MS
 * for the writer thread's lock: the wait blocks the loop, and these writes can fail (logged) and
 * happen again later.
 */
export function briefly<T>(db: Database.Database, write: () => T): T {
  db.exec(`PRAGMA busy_timeout = ${MAINTENANCE_BUSY_TIMEOUT_MS}`);
  try {
    return write();
  } finally {
    db.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
  }
}
