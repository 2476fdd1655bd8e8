import { performance } from 'node:perf_hooks';
import { createDatabase } from './databases.js';
import { freePort, spawnChild, stopChild, type Spawned } from './processes.js';
import type { Check, Row, Section } from './report.js';
import { seedDatabase } from './seed.js';
import { SERVICE_BIN, serviceEnvironment } from './servers.js';

/** The start-up budgets, in seconds, on the store the bench seeds (SQLite, 100 entries). */
export const STARTUP_BUDGETS = { help: 0.3, keysList: 0.3, serve: 1, twoWorkers: 1.5 } as const;
/** The bounds as multiples of `node -e 0` measured in the same run: what the service adds to Node's own start. */
export const STARTUP_RATIOS = { help: 2, keysList: 2, serve: 5 } as const;

interface Measured {
  label: string;
  medianS: number;
  budgetS?: number;
  atMostTimesNode?: number;
}

/**
 * How long the service takes to start, against bare `node -e 0` measured alternately in the same
 * run: the CLI's --help and keys list to exit, serve until /readyz answers 200, and serve
 * --workers 2 until both workers listen and /readyz answers. Unpinned (the workers need both
 * cores); the median of `rounds` runs each.
 */
export async function startupSection(rounds: number): Promise<Section> {
  const databaseUrl = await createDatabase('sqlite', 'startup');
  await seedDatabase(databaseUrl, 100);
  const env = serviceEnvironment(databaseUrl);
  const runs: { label: string; budgetS?: number; atMostTimesNode?: number; once: () => Promise<number> }[] = [
    { label: 'node -e 0', once: () => untilExit([process.execPath, '-e', '0'], env) },
    { label: 'petstore-inventory --help', budgetS: STARTUP_BUDGETS.help, atMostTimesNode: STARTUP_RATIOS.help, once: () => untilExit([SERVICE_BIN, '--help'], env) },
    { label: 'petstore-inventory keys list', budgetS: STARTUP_BUDGETS.keysList, atMostTimesNode: STARTUP_RATIOS.keysList, once: () => untilExit([SERVICE_BIN, 'keys', 'list'], env) },
    { label: 'serve, until /readyz is 200', budgetS: STARTUP_BUDGETS.serve, atMostTimesNode: STARTUP_RATIOS.serve, once: () => untilReady(env, 1) },
    { label: 'serve --workers 2, until both listen', budgetS: STARTUP_BUDGETS.twoWorkers, once: () => untilReady(env, 2) },
  ];
  const samples = runs.map(() => [] as number[]);
  // Interleaved rounds, so that a busy moment of the machine falls on every command alike.
  for (let round = 0; round < rounds; round++) {
    for (const [i, run] of runs.entries()) samples[i]!.push(await run.once());
  }
  const measured: Measured[] = runs.map((run, i) => ({
    label: run.label,
    medianS: median(samples[i]!),
    ...(run.budgetS ? { budgetS: run.budgetS } : {}),
    ...(run.atMostTimesNode ? { atMostTimesNode: run.atMostTimesNode } : {}),
  }));
  const node = measured[0]!.medianS;
  const rows: Row[] = measured.map((m) => ({
    scenario: 'start-up (median)',
    server: m.label,
    checks: m === measured[0] ? [{ text: `${m.medianS.toFixed(3)} s` }] : [seconds(m), timesNode(m, node)],
  }));
  return { title: 'Start-up (SQLite, 100 entries)', rows, notes: [`median of ${rounds} runs each, interleaved; wall time from spawn`] };
}

function seconds(m: Measured): Check {
  const text = `${m.medianS.toFixed(3)} s`;
  return m.budgetS === undefined ? { text } : { text, target: `< ${m.budgetS} s`, met: m.medianS < m.budgetS };
}

function timesNode(m: Measured, node: number): Check {
  const times = m.medianS / node;
  const text = `${times.toFixed(1)}× node -e 0`;
  return m.atMostTimesNode === undefined ? { text } : { text, target: `≤ ${m.atMostTimesNode}×`, met: times <= m.atMostTimesNode };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[sorted.length >> 1]!;
}

/** Seconds from spawn to exit; a non-zero exit fails the bench. */
async function untilExit(command: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const started = performance.now();
  const spawned = spawnChild(command, { env });
  const how = await spawned.exited;
  if (how !== '0') throw new Error(`${command.join(' ')} exited with ${how}:\n${spawned.output()}`);
  return (performance.now() - started) / 1000;
}

/** Seconds from spawning serve (with `workers` processes) until every worker listens and /readyz answers 200. */
async function untilReady(env: NodeJS.ProcessEnv, workers: number): Promise<number> {
  const port = await freePort();
  const args = workers > 1 ? ['serve', '--workers', String(workers)] : ['serve'];
  const started = performance.now();
  // At info, the primary logs each worker that listens.
  const spawned = spawnChild([SERVICE_BIN, ...args], { env: { ...env, PORT: String(port), LOG_LEVEL: workers > 1 ? 'info' : 'warn' } });
  try {
    await waitFor(spawned, () => workers === 1 || countListening(spawned) >= workers);
    await waitFor(spawned, () => false, `http://127.0.0.1:${port}/readyz`);
    return (performance.now() - started) / 1000;
  } finally {
    await stopChild(spawned);
  }
}

function countListening(spawned: Spawned): number {
  return spawned.output().split('\n').filter((line) => line.includes('"msg":"worker listening"')).length;
}

/** Polls every 5 ms until `done()` or, with `url`, a 200 from it; fails if the child exits or 30 s pass. */
async function waitFor(spawned: Spawned, done: () => boolean, url?: string): Promise<void> {
  const deadline = performance.now() + 30_000;
  let exited: string | undefined;
  void spawned.exited.then((how) => (exited = how));
  for (;;) {
    if (exited !== undefined) throw new Error(`serve exited (${exited}) before it was ready:\n${spawned.output()}`);
    if (done()) return;
    if (url && (await fetch(url).then((res) => res.status === 200, () => false))) return;
    if (performance.now() > deadline) throw new Error(`serve was not ready within 30 s:\n${spawned.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
