import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import pg from 'pg';
import { adminQuery } from '../test/support/admin-query.js';
import { launchPgBouncer, type PgBouncer } from '../test/support/pgbouncer.js';
import { createDatabase, POSTGRES_URL } from './databases.js';
import type { LoadGenerator } from './load.js';
import type { LoadResult } from './load-spec.js';
import type { BenchOptions } from './options.js';
import type { Row, Section } from './report.js';
import { GET_CONNECTIONS, PATCH_CONNECTIONS } from './scenarios.js';
import { seedDatabase } from './seed.js';
import { startServer, type RunningServer } from './servers.js';

/** How many instances share the database, in the order they are measured. */
const INSTANCE_COUNTS = [1, 2, 3] as const;

/** How the instances reach PostgreSQL. */
type Route = 'direct' | 'pgbouncer';

/**
 * Several instances on one PostgreSQL database, directly and through PgBouncer in transaction
 * mode: GET and PATCH per second summed over the instances, each instance under a load of its own
 * (the connections split between them), none of them pinned, as a deployment runs them. Beside each
 * figure, what the whole machine's CPU was doing and how many commits a second the database made,
 * so the table says where the limit is.
 */
export async function scalingSection(title: string, options: BenchOptions, load: LoadGenerator): Promise<Section> {
  const rows: Row[] = [];
  const notes = [
    `${availableParallelism()} cores shared by the instances, PostgreSQL, PgBouncer and the load generator; nothing pinned.`,
    'Each figure is the sum over the instances, each loaded by its own generator with an equal share of the connections.',
  ];
  let bouncer: PgBouncer | undefined;
  try {
    bouncer = await launchPgBouncer(POSTGRES_URL);
  } catch (err) {
    notes.push(`PgBouncer: skipped (${(err as Error).message})`);
  }
  try {
    for (const route of bouncer ? (['direct', 'pgbouncer'] as const) : (['direct'] as const)) {
      for (const instances of INSTANCE_COUNTS) {
        rows.push(...(await measure(route, instances, bouncer, options, load, notes)));
      }
    }
  } finally {
    await bouncer?.stop();
  }
  return { title, rows, notes };
}

async function measure(route: Route, instances: number, bouncer: PgBouncer | undefined, options: BenchOptions, load: LoadGenerator, notes: string[]): Promise<Row[]> {
  const directUrl = await createDatabase('postgres', `scaling_${route}_${instances}`);
  const size = options.sizes[1];
  const key = await seedDatabase(directUrl, size);
  const databaseUrl = route === 'pgbouncer' ? bouncer!.url(new URL(directUrl).pathname.slice(1)) : directUrl;
  const env = route === 'pgbouncer' ? { DATABASE_DIRECT_URL: directUrl } : {};
  const servers: RunningServer[] = [];
  try {
    for (let i = 0; i < instances; i++) servers.push(await startServer('service', { databaseUrl, key, pinned: false, env }));
    const rows: Row[] = [];
    for (const method of ['GET', 'PATCH'] as const) {
      const connections = method === 'GET' ? GET_CONNECTIONS : PATCH_CONNECTIONS;
      const before = { cpu: machineCpu(), commits: await commits(directUrl) };
      const results = await Promise.all(
        servers.map((server) =>
          load.run(
            {
              baseUrl: server.baseUrl,
              method,
              authorization: `Bearer ${key}`,
              petCount: size,
              connections: Math.ceil(connections / instances),
              warmupSeconds: options.warmupSeconds,
              durationSeconds: options.durationSeconds,
            },
            false,
          ),
        ),
      );
      const after = { cpu: machineCpu(), commits: await commits(directUrl) };
      const total = sum(results);
      const seconds = (after.cpu.at - before.cpu.at) / 1000;
      const busy = (after.cpu.busy - before.cpu.busy) / (after.cpu.total - before.cpu.total);
      const route_ = route === 'direct' ? 'direct' : 'through PgBouncer';
      process.stderr.write(`  postgres | scaling | ${instances} instance(s) ${route_} | ${method}: ${Math.round(total.requestsPerSecond)} req/s\n`);
      if (total.failed > 0) notes.push(`${method}, ${instances} instance(s) ${route_}: ${total.failed} non-2xx answers or socket errors, left out of req/s`);
      rows.push({
        scenario: `${method} ${method === 'GET' ? 'the whole list' : 'random pet'}, ${size.toLocaleString('en-US')} entries`,
        server: `${instances} instance${instances === 1 ? '' : 's'}, ${route_}`,
        result: total,
        checks: [
          { text: `CPU ${(busy * 100).toFixed(0)}% of ${availableParallelism()} cores` },
          // The warm-up is inside the window here: commits over the whole load, per second of it.
          { text: `${Math.round((after.commits - before.commits) / seconds).toLocaleString('en-US')} commits/s` },
        ],
      });
    }
    return rows;
  } finally {
    await Promise.all(servers.map((server) => server.stop()));
  }
}

/** The loads of several instances as one: requests per second and answers summed, latencies of the slowest. */
function sum(results: LoadResult[]): LoadResult {
  return {
    requestsPerSecond: results.reduce((n, r) => n + r.requestsPerSecond, 0),
    p50Ms: Math.max(...results.map((r) => r.p50Ms)),
    p99Ms: Math.max(...results.map((r) => r.p99Ms)),
    ok: results.reduce((n, r) => n + r.ok, 0),
    failed: results.reduce((n, r) => n + r.failed, 0),
  };
}

/** The machine's CPU time so far, from /proc/stat: busy and total jiffies over all cores, and when it was read. */
function machineCpu(): { busy: number; total: number; at: number } {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/).slice(1).map(Number);
  const total = fields.slice(0, 8).reduce((n, v) => n + v, 0);
  // idle and iowait are the time no process ran.
  return { busy: total - fields[3]! - fields[4]!, total, at: Date.now() };
}

/** Transactions committed in the database so far (the server's statistics, flushed within a second or so). */
async function commits(databaseUrl: string): Promise<number> {
  const database = new URL(databaseUrl).pathname.slice(1);
  const [row] = await adminQuery<{ commits: string }>(`SELECT xact_commit::text AS commits FROM pg_stat_database WHERE datname = ${pg.escapeLiteral(database)}`, POSTGRES_URL);
  return Number(row?.commits ?? 0);
}
