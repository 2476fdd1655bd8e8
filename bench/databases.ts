import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { adminQuery } from '../test/support/admin-query.js';
import { onCleanup } from './lifecycle.js';

export type Backend = 'sqlite' | 'postgres';

/** The PostgreSQL server to bench against (the one the tests use); each dataset gets a database of its own. */
export const POSTGRES_URL = process.env.BENCH_POSTGRES_URL || 'postgres://postgres@127.0.0.1:5432/test';

let sqliteDir: Promise<string> | undefined;

/** A new, empty database for one dataset, removed at the end of the run; returns its DATABASE_URL. */
export async function createDatabase(backend: Backend, name: string): Promise<string> {
  return backend === 'sqlite' ? createSqliteDatabase(name) : createPostgresDatabase(name);
}

async function createSqliteDatabase(name: string): Promise<string> {
  sqliteDir ??= mkdtemp(join(tmpdir(), 'inventory-bench-')).then((dir) => {
    onCleanup(() => rm(dir, { recursive: true, force: true }));
    return dir;
  });
  return `sqlite:${join(await sqliteDir, `${name}.db`)}`;
}

async function createPostgresDatabase(name: string): Promise<string> {
  // pid and random suffix keep parallel or crashed runs apart.
  const database = `bench_${name}_${process.pid}_${randomBytes(3).toString('hex')}`;
  await adminQuery(`CREATE DATABASE ${pg.escapeIdentifier(database)}`, POSTGRES_URL);
  // FORCE: a server killed mid-run may still hold connections.
  onCleanup(async () => void (await adminQuery(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(database)} WITH (FORCE)`, POSTGRES_URL)));
  const url = new URL(POSTGRES_URL);
  url.pathname = `/${database}`;
  return url.toString();
}

/** Why PostgreSQL cannot be used, or undefined when it answers. */
export async function postgresProblem(): Promise<string | undefined> {
  try {
    await adminQuery('SELECT 1', POSTGRES_URL);
    return undefined;
  } catch (err) {
    return (err as Error).message || String((err as { code?: unknown }).code ?? err);
  }
}

/** The server's version and the settings that decide what a commit costs, for the results. */
export async function describePostgres(): Promise<string> {
  const [row] = await adminQuery<{ version: string; fsync: string; commit: string }>(
    "SELECT split_part(version(), ' ', 2) AS version, current_setting('fsync') AS fsync, current_setting('synchronous_commit') AS commit",
    POSTGRES_URL,
  );
  return `PostgreSQL ${row?.version} at ${postgresHost()} (same machine, not pinned), fsync=${row?.fsync}, synchronous_commit=${row?.commit}`;
}

/** Where the server is, as safe to print (no user or password). */
export function postgresHost(): string {
  const url = new URL(POSTGRES_URL);
  return `${url.host}${url.pathname}`;
}
