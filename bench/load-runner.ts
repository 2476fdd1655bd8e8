/**
 * The load generator process, started once and pinned to the load core, so it never takes CPU
 * from the server nor is slowed by the harness. Takes LoadSpec jobs over IPC, one at a time, and
 * answers each with a LoadResult.
 */
import { performance } from 'node:perf_hooks';
import type { RunnerReply } from './child-runner.js';
import { runAutocannon } from './load-autocannon.js';
import { runPaced } from './load-paced.js';
import type { LoadResult, LoadSpec } from './load-spec.js';

export interface LoadJob {
  id: number;
  spec: LoadSpec;
}

export type LoadReply = RunnerReply<LoadResult>;

process.on('message', (job: LoadJob) => {
  // A fixed rate needs requests spaced evenly; autocannon's rate sends each second's quota in one burst.
  const run = job.spec.rate === undefined ? runAutocannon : runPaced;
  const cpuBefore = process.cpuUsage();
  const wallBefore = performance.now();
  run(job.spec).then(
    (result) => {
      const { user, system } = process.cpuUsage(cpuBefore);
      const generatorCpu = (user + system) / 1000 / (performance.now() - wallBefore);
      process.send?.({ id: job.id, result: { ...result, generatorCpu } } satisfies LoadReply);
    },
    (err: unknown) => process.send?.({ id: job.id, error: (err as Error).message } satisfies LoadReply),
  );
});
// The harness going away closes the channel: nothing left to do.
process.on('disconnect', () => process.exit(0));
