/**
 * The load generator process, started once and pinned to the load core, so it never takes CPU
 * from the server nor is slowed by the harness. Takes LoadSpec jobs over IPC, one at a time, and
 * answers each with a LoadResult.
 */
import { performance } from 'node:perf_hooks';
import type { RunnerReply, StopJob } from './child-runner.js';
import { runAutocannon } from './load-autocannon.js';
import { runPaced } from './load-paced.js';
import type { LoadResult, LoadSpec } from './load-spec.js';

export interface LoadJob {
  id: number;
  spec: LoadSpec;
}

export type LoadReply = RunnerReply<LoadResult>;

/** The paced jobs under way, each stopped early by a StopJob naming it (a load that lasts as long as something else does). */
const stops = new Map<number, AbortController>();

process.on('message', (message: LoadJob | StopJob) => {
  if ('stop' in message) return void stops.get(message.stop)?.abort();
  const job = message;
  // A fixed rate needs requests spaced evenly; autocannon's rate sends each second's quota in one burst (and cannot be stopped).
  const ran = job.spec.rate === undefined ? runAutocannon(job.spec) : runPaced(job.spec, stoppable(job.id));
  const cpuBefore = process.cpuUsage();
  const wallBefore = performance.now();
  ran.finally(() => stops.delete(job.id)).then(
    (result) => {
      const { user, system } = process.cpuUsage(cpuBefore);
      const generatorCpu = (user + system) / 1000 / (performance.now() - wallBefore);
      process.send?.({ id: job.id, result: { ...result, generatorCpu } } satisfies LoadReply);
    },
    (err: unknown) => process.send?.({ id: job.id, error: (err as Error).message } satisfies LoadReply),
  );
});

/** The signal a StopJob naming job `id` aborts. */
function stoppable(id: number): AbortSignal {
  const stop = new AbortController();
  stops.set(id, stop);
  return stop.signal;
}

// The harness going away closes the channel: nothing left to do.
process.on('disconnect', () => process.exit(0));
