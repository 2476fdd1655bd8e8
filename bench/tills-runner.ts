/**
 * The tills' clients (tills.ts), started once per backend and pinned to the load core like the
 * load generators: takes TillsJob jobs over IPC, one at a time, and answers each with its result.
 */
import type { RunnerReply } from './child-runner.js';
import { runChanges } from './tills-changes.js';
import type { TillsJob, TillsResult } from './tills-jobs.js';
import { runSales } from './tills-sales.js';

process.on('message', (job: TillsJob & { id: number }) => {
  const run: Promise<TillsResult> = job.kind === 'sales' ? runSales(job) : runChanges(job);
  run.then(
    (result) => process.send?.({ id: job.id, result } satisfies RunnerReply<TillsResult>),
    (err: unknown) => process.send?.({ id: job.id, error: (err as Error).message } satisfies RunnerReply<TillsResult>),
  );
});
// The harness going away closes the channel: nothing left to do.
process.on('disconnect', () => process.exit(0));
