import { parseArgs } from 'node:util';
import type { Backend } from './databases.js';
import type { LoadTool } from './load.js';

export interface BenchOptions {
  /** A quick run or a smoke run: the smaller sizes and shorter windows of each scenario, figures for orientation only. */
  quick: boolean;
  /** A smoke run: every scenario for a moment, to prove the harness works and prints its rows (CI); figures meaningless. */
  smoke: boolean;
  /** Unmeasured load before each measurement, so the JIT has warmed up. */
  warmupSeconds: number;
  durationSeconds: number;
  /** The entry counts of the GET scenarios; PATCH and the mixed load use the middle one. */
  sizes: readonly [small: number, medium: number, large: number];
  backends: readonly Backend[];
  /** Forces a load generator; default wrk when installed. */
  load: LoadTool | undefined;
  /** Runs of each start-up measurement (the median is reported). */
  startupRounds: number;
  /** Entries of the catalogue scenario (import, export, the whole list). */
  catalogueSize: number;
  /** One scenario alone (the start-up only when it is the one), and bench/results.md left as it is. */
  only: 'catalogue' | 'dashboard' | 'docs' | 'durable' | 'events' | 'get' | 'ratelimit' | 'reservations' | 'scaling' | 'startup' | 'tills' | 'webhooks' | undefined;
}

export const HELP = `Usage: npm run bench -- [--quick | --smoke] [--backends sqlite,postgres] [--load wrk|autocannon] [--only catalogue|dashboard|docs|durable|events|get|ratelimit|reservations|scaling|startup|tills|webhooks]

Benchmarks the service against a bare node:http baseline serving the same bytes, and PATCH
against the textbook Express peer; prints the table and, in a full run, writes bench/results.md.

  --quick       1 s per measurement and smaller sizes (100, 1,000, 10,000; a catalogue of
                20,000 instead of 1,000,000), fewer dashboard runs, 200 PATCHes for the event
                lag and 2,000 idle streams instead of 500 and 10,000, one counted round per
                side-by-side comparison instead of 3 and 3 start-up runs instead of 11, for CI;
                targets are shown for orientation only, and bench/results.md is not written
  --smoke       every scenario for a moment (a quarter-second window, no warm-up, sizes of 10,
                100 and 1,000, one start-up run, the quick run's counts cut further): proves the
                harness runs and prints its rows, mostly waiting on its servers; its figures
                mean nothing (what CI runs); bench/results.md is not written
  --only catalogue  only the catalogue scenario (import, export, the whole list); results.md is not written
  --only dashboard  only the dashboard scenario (asset sizes; headless Chromium on 100,000 entries)
  --only docs       only the API reference at /docs (its files' sizes; time to the first operation, cold and warm)
  --only durable    only the durable writes (PATCH and adjustments, the service against bare durable
                    group-commit servers, with CPU per request; GET of 100 and 10,000 entries, with and without
                    100 event streams open); needs wrk
  --only events     only the change events (PATCH with the event log against without it, the time from a
                    PATCH's 200 to its event on a stream, idle streams one process holds)
  --only get        only the main table of each backend (GET of each size, the mixed load and PATCH,
                    the service against the baseline and the Express peer, --workers 2 against one)
  --only ratelimit  only the shared rate limit (GET with REDIS_URL against without it, side by side, on the
                    first of --backends)
  --only reservations  only the reservations (50 clients checking out 1 of a pet, POST /v1/reservations
                    then its commit, against the same clients sending PATCH, side by side)
  --only scaling    only the scaling table (1, 2 and 3 instances on one PostgreSQL database, directly and
                    through PgBouncer in transaction mode: GET and PATCH per second, CPU, commits per second)
  --only startup    only the start-up (--help, keys list, serve until /readyz and serve --workers 2, against
                    node -e 0)
  --only tills      only the tills (50 clients selling by GET + PATCH with If-Match against POST
                    .../adjustments; 1,000 changes in one batch against 1,000 PATCHes)
  --only webhooks   only the webhooks (deliveries a second to one endpoint, the time from a PATCH's 200 to
                    its delivery, PATCH with ten endpoints registered against none, deliveries a second
                    to receivers answering in 0, 20 and 100 ms with maxInFlight 1 and 16)
  --backends    which stores to bench (default: sqlite,postgres; postgres is skipped when unreachable)
  --load        load generator (default: wrk when installed, else autocannon)
  -h, --help    show this help

BENCH_POSTGRES_URL names the PostgreSQL server (default postgres://postgres@127.0.0.1:5432/test);
BENCH_REDIS_URL the Redis of the rate-limit scenario (default redis://127.0.0.1:6379).
`;

const BACKENDS: readonly Backend[] = ['sqlite', 'postgres'];
const LOAD_TOOLS: readonly LoadTool[] = ['wrk', 'autocannon'];
const ONLY = ['catalogue', 'dashboard', 'docs', 'durable', 'events', 'get', 'ratelimit', 'reservations', 'scaling', 'startup', 'tills', 'webhooks'] as const;

/** The run's settings from the command line; undefined after --help. Throws on a wrong call. */
export function parseOptions(argv: string[]): BenchOptions | undefined {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: {
      quick: { type: 'boolean', default: false },
      smoke: { type: 'boolean', default: false },
      backends: { type: 'string', default: BACKENDS.join(',') },
      load: { type: 'string' },
      only: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) return undefined;
  const backends = values.backends.split(',').map((name) => {
    const backend = BACKENDS.find((b) => b === name.trim());
    if (!backend) throw new Error(`--backends: unknown backend "${name}"; use ${BACKENDS.join(', ')}`);
    return backend;
  });
  const load = values.load === undefined ? undefined : LOAD_TOOLS.find((t) => t === values.load);
  if (values.load !== undefined && !load) throw new Error(`--load must be ${LOAD_TOOLS.join(' or ')}, got "${values.load}"`);
  const only = values.only === undefined ? undefined : ONLY.find((o) => o === values.only);
  if (values.only !== undefined && !only) throw new Error(`--only takes ${ONLY.join(' or ')}, got "${values.only}"`);
  const smoke = values.smoke;
  const quick = values.quick || smoke;
  return {
    quick,
    smoke,
    warmupSeconds: smoke ? 0 : quick ? 0.25 : 2,
    durationSeconds: smoke ? 0.25 : quick ? 1 : 10,
    // Quick: every scenario, but a tenth of the entries, so a slow build still answers within 1 s windows.
    sizes: smoke ? [10, 100, 1_000] : quick ? [100, 1_000, 10_000] : [100, 10_000, 100_000],
    backends,
    load,
    startupRounds: smoke ? 1 : quick ? 3 : 11,
    catalogueSize: smoke ? 1_000 : quick ? 20_000 : 1_000_000,
    only,
  };
}
