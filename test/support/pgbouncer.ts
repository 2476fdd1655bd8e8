import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { TEST_DATABASE_DIRECT_URL } from './admin-query.js';
import { freePort, missingToolSkip } from './process.js';

/** Where Debian's package puts it (`apt-get install pgbouncer`). */
export const PGBOUNCER = '/usr/sbin/pgbouncer';

/** A deadline on waiting for it to accept connections, not a measure of speed. */
const START_WAIT_MS = 10_000;

/** describe()'s `skip` for the tests that start a PgBouncer (missingToolSkip). */
export function pgbouncerSkip(): string | false {
  return missingToolSkip('PgBouncer tests', PGBOUNCER, 'apt-get install pgbouncer');
}

/** A running PgBouncer: the URL of a database through it, and how to stop it. */
export interface PgBouncer {
  /** `target`'s URL (or the same URL naming another `database`) with PgBouncer's host and port. */
  url(database?: string): string;
  /** Its log so far (for a failure's message). */
  log(): string;
  stop(): Promise<void>;
}

/**
 * A PgBouncer in transaction mode (as managed offerings run it, none of its settings changed for
 * us) on a free loopback port, in front of the PostgreSQL server at `target` (trust auth; every
 * database of it, every role looked up through the target's user). Resolves once it accepts
 * connections.
 */
export async function launchPgBouncer(target: string): Promise<PgBouncer> {
  const server = new URL(target);
  const dir = mkdtempSync(join(tmpdir(), 'pgbouncer-'));
  // It refuses to run as root and drops to -u USER, who must write its files.
  chmodSync(dir, 0o777);
  const port = await freePort();
  const user = decodeURIComponent(server.username) || 'postgres';
  writeFileSync(join(dir, 'users.txt'), `"${user}" ""\n`);
  writeFileSync(
    join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `* = host=${server.hostname || '127.0.0.1'} port=${server.port || 5432}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'pool_mode = transaction',
      // No password: the server trusts local connections; other roles are looked up through auth_user.
      'auth_type = trust',
      `auth_file = ${join(dir, 'users.txt')}`,
      `auth_user = ${user}`,
      'max_client_conn = 1000',
      '',
    ].join('\n'),
  );
  const asRoot = process.getuid?.() === 0;
  // Its log comes on stderr, kept for a failure's message and for tests that read its warnings.
  const proc = spawn(PGBOUNCER, [...(asRoot ? ['-u', 'nobody'] : []), join(dir, 'pgbouncer.ini')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  proc.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  const url = (database?: string) => {
    const through = new URL(target);
    through.hostname = '127.0.0.1';
    through.port = String(port);
    if (database !== undefined) through.pathname = `/${database}`;
    return through.toString();
  };
  const stop = async () => {
    proc.kill('SIGTERM');
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitUntilAccepting(url(), () => stderr);
  } catch (err) {
    await stop();
    throw err;
  }
  return { url, log: () => stderr, stop };
}

/** A PgBouncer of the test's own (launchPgBouncer) in front of the tests' PostgreSQL (TEST_DATABASE_DIRECT_URL), stopped when the test ends; resolves to its URL. */
export async function startPgBouncer(t: TestContext): Promise<string> {
  const bouncer = await launchPgBouncer(TEST_DATABASE_DIRECT_URL);
  t.after(() => bouncer.stop());
  return bouncer.url();
}

async function waitUntilAccepting(url: string, log: () => string): Promise<void> {
  const deadline = Date.now() + START_WAIT_MS;
  for (;;) {
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
    client.on('error', () => {});
    try {
      await client.connect();
      await client.query('SELECT 1');
      return;
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`PgBouncer did not accept connections within ${START_WAIT_MS} ms: ${String(err)}\n${log()}`);
      await sleep(50);
    } finally {
      await client.end().catch(() => {});
    }
  }
}
