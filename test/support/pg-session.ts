import type { TestContext } from 'node:test';
import pg from 'pg';
import { adminQuery, TEST_DATABASE_DIRECT_URL } from './admin-query.js';

/**
 * A PostgreSQL session of the test's own on a test schema, to hold a transaction (and its locks)
 * open while the code under test runs; ended with the test. Direct, never through a pooler: the
 * session must outlive its statements.
 */
export async function heldSession(schema: string, t: TestContext): Promise<pg.Client & { pid: number }> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_DIRECT_URL });
  client.on('error', () => {});
  await client.connect();
  t.after(() => client.end().catch(() => {}));
  await client.query(`SET search_path = ${pg.escapeIdentifier(schema)}`);
  const pid = Number((await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid);
  return Object.assign(client, { pid });
}

/** The statement of each session that waits for a lock the session `pid` holds (asked on a connection of its own: within a transaction, pg_stat_activity does not change). */
export async function waitingOn(pid: number): Promise<string[]> {
  const rows = await adminQuery<{ query: string }>(`SELECT query FROM pg_stat_activity WHERE ${Math.trunc(pid)} = ANY(pg_blocking_pids(pid))`);
  return rows.map((r) => r.query);
}
