import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { BENCH_WITHOUT_EVENT_LOG } from '../src/cli/serve.js';
import { CONFIG_VARIABLES } from '../src/config.js';
import { freePort, peakRssBytes, processName, REPO_ROOT, rssBytes, spawnChild, stopChild, TSX_NODE, waitUntilHealthy } from './processes.js';

export const SERVICE_BIN = resolve(REPO_ROOT, 'bin', 'petstore-inventory');

export type ServerKind = 'baseline' | 'service' | 'peer' | 'durable';

export const SERVER_LABELS: Record<ServerKind, string> = {
  baseline: 'baseline (node:http)',
  service: 'service',
  peer: 'express peer',
  durable: 'bare durable (node:http, group commit)',
};

export interface ServerOptions {
  databaseUrl: string;
  key: string;
  /** Pin to the server core (default); the --workers comparison runs unpinned. */
  pinned?: boolean;
  /** service only: `serve --workers N`. */
  workers?: number;
  /** service: settings (or the bench's own variables) on top of the bench's environment; durable: BARE_WRITES. */
  env?: NodeJS.ProcessEnv;
}

export interface RunningServer {
  kind: ServerKind;
  baseUrl: string;
  /** The server process's pid (taskset and the bin's shebang exec in place: node's own). */
  pid: number | undefined;
  /** Peak RSS so far of the server process (for --workers, of the primary only). */
  peakRssBytes(): number | undefined;
  /** Its RSS now. */
  rssBytes(): number | undefined;
  stop(): Promise<void>;
}

/** Starts one server on a free loopback port and waits until /healthz answers. */
export async function startServer(kind: ServerKind, options: ServerOptions): Promise<RunningServer> {
  const port = await freePort();
  const metricsPort = kind === 'service' ? await otherFreePort(port) : undefined;
  const spawned = spawnChild(command(kind, options), {
    env: environment(kind, options, port, metricsPort),
    ...(options.pinned === false ? {} : { core: 'server' as const }),
  });
  const baseUrl = `http://127.0.0.1:${port}`;
  try {
    await waitUntilHealthy(baseUrl, spawned, SERVER_LABELS[kind]);
    if (metricsPort !== undefined) {
      await metricsServed(metricsPort);
      await caughtUp(baseUrl);
    }
  } catch (err) {
    await stopChild(spawned, 0);
    throw err;
  }
  const pid = spawned.child.pid;
  // Peak RSS must be the server's own: taskset and the bin's shebang exec in place, so this pid should be node.
  const name = processName(pid);
  if (name !== undefined && name !== 'node' && !name.startsWith('node')) {
    process.stderr.write(`bench: note: ${kind} pid ${pid} is "${name}", not node; its peak RSS may not be the server's\n`);
  }
  return { kind, baseUrl, pid, peakRssBytes: () => peakRssBytes(pid), rssBytes: () => rssBytes(pid), stop: () => stopChild(spawned) };
}

function command(kind: ServerKind, options: ServerOptions): string[] {
  switch (kind) {
    case 'service':
      return [SERVICE_BIN, 'serve', ...(options.workers === undefined ? [] : ['--workers', String(options.workers)])];
    case 'baseline':
      return [...TSX_NODE, 'bench/baseline.ts'];
    case 'peer':
      return [...TSX_NODE, 'bench/express-peer.ts'];
    case 'durable':
      return [...TSX_NODE, bareDurableFile(options.databaseUrl)];
  }
}

/** The bare durable server for this database's backend, relative to the repository. */
export function bareDurableFile(databaseUrl: string): string {
  return `bench/bare-durable-${databaseUrl.startsWith('sqlite:') ? 'sqlite' : 'pg'}.ts`;
}

function environment(kind: ServerKind, options: ServerOptions, port: number, metricsPort: number | undefined): NodeJS.ProcessEnv {
  // As deployed, metrics on: without METRICS_PORT the service measures nothing at all, which would flatter every figure.
  if (kind === 'service') return { ...serviceEnvironment(options.databaseUrl), METRICS_PORT: String(metricsPort), ...options.env, PORT: String(port) };
  return { ...withoutSettings(), ...options.env, DATABASE_URL: options.databaseUrl, PORT: String(port), BENCH_KEY: options.key };
}

/** A free loopback port that is not `taken` (two servers of one process cannot share a port). */
async function otherFreePort(taken: number): Promise<number> {
  for (;;) {
    const port = await freePort();
    if (port !== taken) return port;
  }
}

/**
 * Waits until the service's metrics server answers 200, and throws if it never does: the figures
 * claim the service measured itself meanwhile. With --workers the primary sums its workers'
 * metrics, and answers 500 until every worker is up, where /healthz needs only one.
 */
async function metricsServed(port: number, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const status = await fetch(`http://127.0.0.1:${port}/metrics`).then(
      async (res) => {
        await res.arrayBuffer();
        return String(res.status);
      },
      (err: unknown) => `nothing (${err instanceof Error ? err.message : String(err)})`,
    );
    if (status === '200') return;
    if (Date.now() > deadline) throw new Error(`the service's metrics server (METRICS_PORT ${port}) answered ${status}, not 200, for ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Waits until /readyz answers 200. The first scrape counts the list's entries, which loads the list:
 * on a store of a million entries that holds the event loop for seconds, and the service then sheds
 * every request but /healthz with 503 until the loop catches up. The figures are of a service that
 * serves, so they start once it does again.
 */
async function caughtUp(baseUrl: string, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const status = await fetch(`${baseUrl}/readyz`).then(
      async (res) => {
        await res.arrayBuffer();
        return res.status;
      },
      () => 0,
    );
    if (status === 200) return;
    if (Date.now() > deadline) throw new Error(`the service's /readyz answered ${status || 'nothing'}, not 200, for ${timeoutMs / 1000} s after its metrics were served`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** What the service runs with in the bench: none of the caller's settings, this database, on loopback, warnings only. */
export function serviceEnvironment(databaseUrl: string): NodeJS.ProcessEnv {
  // One key sends far more than a client may: a limit no run reaches keeps the limiter's cost in the figures, without its 429s.
  return { ...withoutSettings(), DATABASE_URL: databaseUrl, HOST: '127.0.0.1', LOG_LEVEL: 'warn', INVENTORY_ENV: 'production', RATE_LIMIT_PER_MINUTE: '1000000000' };
}

/** The environment without the service's settings: the caller's shell (BODY_LIMIT, TRUST_PROXY...) would make runs incomparable. */
function withoutSettings(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of Object.keys(CONFIG_VARIABLES)) delete env[name];
  delete env.WORKERS;
  // Only the events scenario's second server runs without the event log, and only when it says so.
  delete env[BENCH_WITHOUT_EVENT_LOG];
  return env;
}

/** Whether this version of the service has `serve --workers`, from its own help text. */
export async function serviceHasWorkers(): Promise<boolean> {
  const { stdout } = await promisify(execFile)(SERVICE_BIN, ['serve', '--help'], { cwd: REPO_ROOT });
  return /--workers\b/.test(stdout);
}
