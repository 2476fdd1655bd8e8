import { spawnChild } from './processes.js';
import { SERVICE_BIN, serviceEnvironment } from './servers.js';

/**
 * Makes a Node process print its peak RSS (KiB) and its CPU time so far (user + system, µs, all its
 * threads) to stderr as it exits: how a child's own figures are read once it is gone.
 */
const REPORT_AT_EXIT =
  "process.on('exit', () => { const u = process.resourceUsage(); " +
  "process.stderr.write('\\npeak-rss-kib ' + u.maxRSS + ' cpu-us ' + (u.userCPUTime + u.systemCPUTime) + '\\n'); })";

export interface CliRun {
  seconds: number;
  stdout: string;
  peakRssBytes: number | undefined;
  /** User plus system CPU time of the whole process, every thread, start-up included. */
  cpuSeconds: number | undefined;
}

/** Runs `petstore-inventory ARGS` on `databaseUrl` as deployed; wall time from spawn to exit. Fails on a non-zero exit. */
export async function runCli(databaseUrl: string, args: string[]): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const env = { ...serviceEnvironment(databaseUrl), NODE_OPTIONS: `--import=data:text/javascript,${encodeURIComponent(REPORT_AT_EXIT)}` };
  const started = performance.now();
  const spawned = spawnChild([SERVICE_BIN, ...args], { env });
  spawned.child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  spawned.child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const how = await spawned.exited;
  const seconds = (performance.now() - started) / 1000;
  if (how !== '0') throw new Error(`petstore-inventory ${args.join(' ')} exited with ${how}:\n${spawned.output()}`);
  // A worker thread reports too (the preload runs in each), and its figures are the process's so far: the last is the largest.
  const reports = [...stderr.matchAll(/peak-rss-kib (\d+) cpu-us (\d+)/g)];
  const largest = (field: 1 | 2) => (reports.length === 0 ? undefined : Math.max(...reports.map((m) => Number(m[field]))));
  const kib = largest(1);
  const cpuMicros = largest(2);
  return { seconds, stdout, peakRssBytes: kib === undefined ? undefined : kib * 1024, cpuSeconds: cpuMicros === undefined ? undefined : cpuMicros / 1e6 };
}
