import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import pg from 'pg';
import { MIGRATIONS as POSTGRES_MIGRATIONS } from '../../src/store/postgres/migrations.js';
import { MIGRATIONS as SQLITE_MIGRATIONS } from '../../src/store/sqlite/migrations.js';
import type { PostgresStoreOptions } from '../../src/store/postgres/connection.js';
import { openStore as openPostgresStore } from '../../src/store/postgres/open.js';
import { Connection } from '../../src/store/sqlite/connection.js';
import { openStore as openSqliteStore } from '../../src/store/sqlite/open.js';
import type { Store } from '../../src/store/store.js';
import { adminQuery, TEST_DATABASE_DIRECT_URL, TEST_DATABASE_URL, TEST_STORE_DIRECT_URL } from './admin-query.js';

export type Backend = Store['backend'];
export const ALL_BACKENDS: readonly Backend[] = ['sqlite', 'postgres'];

/** The backends this run covers: TEST_BACKENDS=sqlite,postgres (comma-separated), default all. */
export const BACKENDS: readonly Backend[] = selectBackends(process.env.TEST_BACKENDS);

// In a file of their own, which the benchmark imports without the rest of this one.
export { adminQuery, TEST_DATABASE_DIRECT_URL, TEST_DATABASE_URL, TEST_STORE_DIRECT_URL } from './admin-query.js';

/** The versions each backend's schema_migrations must hold, once each. */
export const MIGRATION_VERSIONS: Record<Backend, number[]> = {
  sqlite: SQLITE_MIGRATIONS.map((m) => m.version),
  postgres: POSTGRES_MIGRATIONS.map((m) => m.version),
};

const IN_CI = process.env.CI === 'true';
const PROBE_TIMEOUT_MS = 3000;

function selectBackends(raw: string | undefined): Backend[] {
  if (raw === undefined || raw.trim() === '') return [...ALL_BACKENDS];
  return raw.split(',').map((name) => {
    const backend = ALL_BACKENDS.find((b) => b === name.trim());
    if (!backend) throw new Error(`TEST_BACKENDS names "${name.trim()}"; use a comma-separated list of ${ALL_BACKENDS.join(', ')}`);
    return backend;
  });
}

let postgresProbe: Promise<string | undefined> | undefined;

/** Why PostgreSQL cannot be used (said once on stderr unless CI=true), or undefined when it can; asked once per process. */
function postgresProblem(): Promise<string | undefined> {
  postgresProbe ??= (async () => {
    const client = new pg.Client({ connectionString: TEST_DATABASE_URL, connectionTimeoutMillis: PROBE_TIMEOUT_MS });
    client.on('error', () => {});
    try {
      await client.connect();
      await client.query('SELECT 1');
      return undefined;
    } catch (err) {
      const reason = describeError(err);
      if (!IN_CI) {
        process.stderr.write(
          `PostgreSQL tests SKIPPED: cannot connect to ${withoutPassword(TEST_DATABASE_URL)} (${reason}). ` +
            'Start PostgreSQL or set TEST_DATABASE_URL; set TEST_BACKENDS=sqlite to silence.\n',
        );
      }
      return reason;
    } finally {
      await client.end().catch(() => {});
    }
  })();
  return postgresProbe;
}

/** Whether the backend can be reached in this run (SQLite always can). */
export async function backendAvailable(backend: Backend): Promise<boolean> {
  return backend === 'sqlite' || (await postgresProblem()) === undefined;
}

/**
 * describe()'s `skip` for a backend's suite: a reason when TEST_BACKENDS leaves the backend out or
 * it is unreachable; false when it is reachable or when CI=true, where its tests must run and fail instead.
 */
export async function backendSkip(backend: Backend): Promise<string | false> {
  // For suites written for one backend (not looped over BACKENDS): TEST_BACKENDS narrows them too.
  if (!BACKENDS.includes(backend)) return `${backend} is not in TEST_BACKENDS`;
  if (IN_CI || (await backendAvailable(backend))) return false;
  return `PostgreSQL unreachable at ${withoutPassword(TEST_DATABASE_URL)}`;
}

/** Connection overrides for a PostgreSQL test store; SQLite has no connection to override. */
export type PostgresOverrides = Omit<PostgresStoreOptions, 'schema'> & { url?: string };

/** A fresh, empty database for one test: a temp SQLite file or a new PostgreSQL schema. */
export interface TestDatabase {
  readonly backend: Backend;
  /** The SQLite file, or the PostgreSQL schema. */
  readonly location: string;
  /** A DATABASE_URL naming this database, for a server or CLI in another process. */
  readonly databaseUrl: string;
  /** Opens one more store on this database; every store is closed when the test ends. */
  open(postgres?: PostgresOverrides): Promise<Store>;
  /** The versions in schema_migrations, one entry per row, ascending. */
  migrationVersions(): Promise<number[]>;
  /** Runs SQL on this database outside any store and returns the rows of its last statement: for states no code path writes today. */
  sql<R extends Record<string, unknown>>(text: string): Promise<R[]>;
}

/** Creates a fresh database for the test and removes it (after closing its stores) when the test ends. */
export async function createTestDatabase(backend: Backend, t: TestContext): Promise<TestDatabase> {
  const stores: Store[] = [];
  const database = backend === 'sqlite' ? await sqliteDatabase() : await postgresDatabase();
  t.after(async () => {
    await Promise.all(stores.map((s) => s.close()));
    await database.remove();
  });
  return {
    backend,
    location: database.location,
    databaseUrl: database.databaseUrl,
    async open(overrides) {
      const store = await database.open(overrides);
      stores.push(store);
      return store;
    },
    migrationVersions: () => database.migrationVersions(),
    sql: (text) => database.sql(text),
  };
}

/** A store on a fresh database, closed and removed when the test ends. */
export async function openTestStore(backend: Backend, t: TestContext): Promise<Store> {
  return (await createTestDatabase(backend, t)).open();
}

interface Location {
  location: string;
  databaseUrl: string;
  open(overrides?: PostgresOverrides): Promise<Store>;
  migrationVersions(): Promise<number[]>;
  sql<R extends Record<string, unknown>>(text: string): Promise<R[]>;
  remove(): Promise<void>;
}

async function sqliteDatabase(): Promise<Location> {
  const dir = await mkdtemp(join(tmpdir(), 'inventory-store-test-'));
  const filename = join(dir, 'inventory.db');
  return {
    location: filename,
    databaseUrl: `sqlite:${filename}`,
    open: async () => openSqliteStore(filename),
    async migrationVersions() {
      // A Connection, as the store's: no better-sqlite3 object may be garbage collected (see Connection).
      const db = new Connection(filename, { readonly: true });
      try {
        return db.prepare('SELECT version FROM schema_migrations ORDER BY version').pluck().all() as number[];
      } finally {
        db.close();
      }
    },
    async sql<R>(text: string) {
      const db = new Connection(filename);
      try {
        const statements = statementsOf(text);
        for (const statement of statements.slice(0, -1)) db.exec(statement);
        const last = db.prepare(statements.at(-1)!);
        return (last.reader ? last.all() : (last.run(), [])) as R[];
      } finally {
        db.close();
      }
    },
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}

let schemaCounter = 0;
/** SQLSTATE 40P01, and how often a schema's DROP is tried when it is the side a deadlock cancels. */
const DEADLOCK_DETECTED = '40P01';
const DROP_ATTEMPTS = 5;

async function postgresDatabase(): Promise<Location> {
  const problem = await postgresProblem();
  if (problem !== undefined) {
    const where = `PostgreSQL at ${withoutPassword(TEST_DATABASE_URL)} is unreachable: ${problem}`;
    throw new Error(IN_CI ? `CI=true but ${where}` : where);
  }
  // pid and counter keep parallel runs and tests apart; the random part survives pid reuse after a crashed run.
  const schema = `t_${process.pid}_${++schemaCounter}_${randomBytes(3).toString('hex')}`;
  const quoted = pg.escapeIdentifier(schema);
  return {
    location: schema,
    databaseUrl: `${TEST_DATABASE_URL}${TEST_DATABASE_URL.includes('?') ? '&' : '?'}schema=${schema}`,
    open: ({ url = TEST_DATABASE_URL, ...options } = {}) => openPostgresStore(url, { directUrl: TEST_STORE_DIRECT_URL, ...options, schema }),
    async migrationVersions() {
      const rows = await adminQuery<{ version: number }>(`SELECT version FROM ${quoted}.schema_migrations ORDER BY version`);
      return rows.map((r) => r.version);
    },
    async sql<R extends pg.QueryResultRow>(text: string) {
      const client = new pg.Client({ connectionString: TEST_DATABASE_DIRECT_URL, connectionTimeoutMillis: PROBE_TIMEOUT_MS });
      client.on('error', () => {});
      await client.connect();
      try {
        await client.query(`SET search_path = ${quoted}`);
        let rows: R[] = [];
        for (const statement of statementsOf(text)) rows = (await client.query<R>(statement)).rows;
        return rows;
      } finally {
        await client.end();
      }
    },
    async remove() {
      // A server process a test started may still be writing here when this runs (after hooks run in the order
      // they were added, and the database comes first): the DROP can then be the side PostgreSQL's deadlock
      // detector cancels, and the next try, with that server's transaction gone, drops it.
      for (let attempt = 1; ; attempt++) {
        try {
          await adminQuery(`DROP SCHEMA IF EXISTS ${quoted} CASCADE`);
          return;
        } catch (err) {
          if ((err as { code?: unknown }).code !== DEADLOCK_DETECTED || attempt === DROP_ATTEMPTS) throw err;
        }
      }
    },
  };
}

/** The URL as safe to print: the password, if any, removed. */
export function withoutPassword(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.password = '';
    return parsed.toString();
  } catch {
    return url.replace(/:[^:@/]*@/, '@');
  }
}

function describeError(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  // An AggregateError (every address of a host refused) has an empty message but a code.
  const code = (err as { code?: unknown }).code;
  return err.message || (typeof code === 'string' ? code : err.name);
}

/** The statements of a script of the tests' own (no semicolon inside a literal). */
function statementsOf(text: string): string[] {
  return text.split(';').map((t) => t.trim()).filter(Boolean);
}
