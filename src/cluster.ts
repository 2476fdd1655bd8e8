import cluster, { type Worker } from 'node:cluster';
import { hostname } from 'node:os';
import { ConfigError, type Config, type LogLevel } from './config.js';
import { firstRunBanner, prepareStore } from './first-run.js';
import { clusterMetrics } from './metrics/cluster.js';
import { startMetricsServer } from './metrics/server.js';
import { explainListenError } from './port-in-use.js';
import { openStore, parseDatabaseUrl } from './store/open.js';
import { onStopSignals } from './stop-signals.js';

/** The first restart of a crashed worker waits this long; each further crash in CRASH_WINDOW_MS doubles it. */
export const RESTART_DELAY_MS = 500;
export const MAX_RESTART_DELAY_MS = 30_000;
export const CRASH_WINDOW_MS = 60_000;

export interface ClusterOptions {
  /** How many worker processes share the port (2 or more). */
  workers: number;
  /** Load DEMO_PETS when the store has no entries (done once, here). */
  demo: boolean;
  /** Where the first-run banner and a start failure go (stderr). */
  print: (text: string) => void;
  /** Where the primary's JSON log lines go (stdout, with the workers' own). */
  log: (line: string) => void;
}

/**
 * The primary of `serve --workers N`: prepares the store once (migrations, demo pets, first-run
 * key), forks N workers that listen on one shared port, restarts a worker that dies, and on
 * SIGTERM/SIGINT stops them all gracefully (a copy of that signal within REPEATED_SIGNAL_MS is no
 * new request; a later signal kills them). Resolves once the workers are forked; the process
 * exits by itself: 0 after a clean shutdown, 1 when a worker cannot start or will not stop.
 */
export async function startCluster(config: Config, options: ClusterOptions): Promise<void> {
  const target = parseDatabaseUrl(config.databaseUrl);
  if (target.backend === 'sqlite' && target.filename === ':memory:') {
    throw new ConfigError('--workers above 1 needs a store the workers share; DATABASE_URL sqlite::memory: is private to each process');
  }
  const log = jsonLogger(config.logLevel, options.log);
  // Before any worker opens the store, so they find the migrations applied and the key made.
  const store = await openStore(config.databaseUrl, { directUrl: config.databaseDirectUrl });
  let firstKey: string | undefined;
  let firstPetId: bigint | undefined;
  try {
    firstKey = await prepareStore(store, config, options.demo);
    if (firstKey) firstPetId = (await store.entries.listInventory())[0]?.petId;
  } finally {
    await store.close();
  }

  const live = new Set<Worker>();
  const listening = new Set<Worker>();
  const restarts = new Set<NodeJS.Timeout>();
  let crashes: number[] = [];
  let stopping = false;
  let exitCode = 0;

  const fork = () => live.add(cluster.fork());
  const finishIfDone = () => {
    if (live.size > 0 || restarts.size > 0) return;
    log('info', exitCode === 0 ? 'all workers stopped' : 'workers stopped, not all cleanly', { exitCode });
    process.exit(exitCode);
  };
  const stop = (reason: string, fields: Record<string, unknown>) => {
    stopping = true;
    for (const timer of restarts) clearTimeout(timer);
    restarts.clear();
    log('info', `${reason}: stopping workers`, { ...fields, workers: live.size });
    for (const worker of live) worker.process.kill('SIGTERM');
    // Each worker drains, then gives up on in-flight requests after the same time; this catches one that hangs.
    const timeoutMs = Math.max(config.shutdownDrainMs, config.shutdownMinDrainMs) + config.shutdownTimeoutMs;
    setTimeout(() => {
      log('error', 'workers did not stop in time; killing them', { timeoutMs, workers: live.size });
      for (const worker of live) worker.process.kill('SIGKILL');
      process.exit(1);
    }, timeoutMs).unref();
    finishIfDone();
  };

  cluster.on('listening', (worker, address) => {
    listening.add(worker);
    log('info', 'worker listening', { worker: worker.id, workerPid: worker.process.pid, port: address.port });
    if (firstKey) {
      options.print(firstRunBanner(firstKey, { host: config.host, port: address.port, firstPetId }));
      firstKey = undefined;
    }
  });

  cluster.on('exit', (worker, code, signal) => {
    live.delete(worker);
    const started = listening.delete(worker);
    const fields = { worker: worker.id, workerPid: worker.process.pid, code, signal };
    if (stopping) {
      // A worker still starting has no SIGTERM handler yet: the signal ends it, which is clean here.
      if (code !== 0 && !(signal === 'SIGTERM' && !started)) exitCode = 1;
      log(code === 0 ? 'info' : 'warn', 'worker stopped', fields);
      finishIfDone();
      return;
    }
    if (!started) {
      // A port in use, a bad setting, an unreachable database: a restart would fail the same way.
      exitCode = 1;
      log('error', 'worker exited before it listened', fields);
      options.print(`petstore-inventory: worker ${worker.id} exited with ${signal ?? `code ${code}`} before it listened; stopping\n`);
      stop('a worker could not start', fields);
      return;
    }
    const now = Date.now();
    crashes = [...crashes.filter((at) => now - at < CRASH_WINDOW_MS), now];
    const delayMs = Math.min(MAX_RESTART_DELAY_MS, RESTART_DELAY_MS * 2 ** (crashes.length - 1));
    log('error', 'worker exited unexpectedly; restarting it', { ...fields, delayMs });
    const timer = setTimeout(() => {
      restarts.delete(timer);
      fork();
    }, delayMs);
    restarts.add(timer);
  });

  onStopSignals((request, signal) => {
    if (request === 'copy') return log('info', 'the same signal again at once: already shutting down', { signal });
    if (request === 'stop-now') {
      log('warn', 'second signal: killing workers without waiting', { signal });
      for (const worker of live) worker.process.kill('SIGKILL');
      process.exit(1);
    }
    // Already stopping (a worker could not start): the workers have their SIGTERM.
    if (!stopping) stop('shutting down', { signal });
  });

  if (config.metricsPort !== undefined) {
    // One scrape sees the whole instance: the primary asks every worker and serves the sum.
    const served = await startMetricsServer({
      host: config.metricsHost,
      port: config.metricsPort,
      render: clusterMetrics(),
      onError: (err) => log('error', 'could not gather the workers’ metrics', { err: err instanceof Error ? err.message : String(err) }),
    }).catch((err: unknown) => {
      throw explainListenError(err, config.metricsPort ?? 0, 'METRICS_PORT');
    });
    log('info', `metrics listening at http://${config.metricsHost}:${served.port}/metrics`, { port: served.port });
  }
  log('info', 'starting workers', { workers: options.workers });
  for (let i = 0; i < options.workers; i++) fork();
}

/**
 * A worker of `serve --workers N`: serves on the shared port with the store its primary prepared
 * (no demo pets, no first-run key); the primary's SIGTERM stops it gracefully.
 */
export async function runWorker(config: Config, print: (text: string) => void): Promise<void> {
  try {
    const { startServer } = await import('./server.js');
    await startServer(config, { demo: false, print, worker: true });
  } catch (err) {
    // The channel to the primary would keep a worker that failed alive; the CLI reports the error.
    cluster.worker?.disconnect();
    throw err;
  }
}

const LEVELS: Record<LogLevel, number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60, silent: Infinity };

/** JSON lines shaped like the workers' pino lines (level, time, pid, hostname, msg), at or above `level`. */
function jsonLogger(level: LogLevel, write: (line: string) => void) {
  const host = hostname();
  return (at: Exclude<LogLevel, 'silent'>, msg: string, fields: Record<string, unknown> = {}) => {
    if (LEVELS[at] < LEVELS[level]) return;
    write(`${JSON.stringify({ level: LEVELS[at], time: Date.now(), pid: process.pid, hostname: host, role: 'primary', ...fields, msg })}\n`);
  };
}
