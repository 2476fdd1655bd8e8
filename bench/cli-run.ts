import { spawnChild } from './processes.js';
import { SERVICE_BIN, serviceEnvironment } from './servers.js';

/** Makes a Node process print its peak RSS (KiB) to stderr as it exits: how a child's own peak is read once it is gone. */
const REPORT_PEAK_RSS = `process.on('exit', () => process.stderr.write('\\npeak-rss-kib ' + process.resourceUsage().maxRSS + '\\n'))`;

export interface CliRun {
  seconds: number;
  stdout: string;
  peakRssBytes: number | undefined;
}

/** Runs `petstore-inventory ARGS` on `databaseUrl` as deployed; wall time from spawn to exit. Fails on a non-zero exit. */
export async function runCli(databaseUrl: string, args: string[]): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const env = { ...serviceEnvironment(databaseUrl), NODE_OPTIONS: `--import=data:text/javascript,${encodeURIComponent(REPORT_PEAK_RSS)}` };
  const started = performance.now();
  const spawned = spawnChild([SERVICE_BIN, ...args], { env });
  spawned.child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  spawned.child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const how = await spawned.exited;
  const seconds = (performance.now() - started) / 1000;
  if (how !== '0') throw new Error(`petstore-inventory ${args.join(' ')} exited with ${how}:\n${spawned.output()}`);
  // A worker thread reports too (the preload runs in each): the peak is the process's, the largest.
  const kib = [...stderr.matchAll(/peak-rss-kib (\d+)/g)].map((m) => Number(m[1]));
  return { seconds, stdout, peakRssBytes: kib.length === 0 ? undefined : Math.max(...kib) * 1024 };
}
