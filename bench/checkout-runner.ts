/**
 * The checkout clients (reservations.ts), started once per backend and pinned to the load core like
 * the tills' clients: takes CheckoutJob jobs over IPC, one at a time, and answers each with its result.
 */
import type { RunnerReply } from './child-runner.js';
import { runCheckouts, type CheckoutJob, type CheckoutResult } from './checkout-clients.js';

process.on('message', (job: CheckoutJob & { id: number }) => {
  runCheckouts(job).then(
    (result) => process.send?.({ id: job.id, result } satisfies RunnerReply<CheckoutResult>),
    (err: unknown) => process.send?.({ id: job.id, error: (err as Error).message } satisfies RunnerReply<CheckoutResult>),
  );
});
// The harness going away closes the channel: nothing left to do.
process.on('disconnect', () => process.exit(0));
