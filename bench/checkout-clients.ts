import { performance } from 'node:perf_hooks';
import { percentile } from './load-spec.js';
import { agentFor, call } from './tills-jobs.js';

/** How a client writes: one PATCH setting a count, or a checkout: POST /v1/reservations of 1, then its commit. */
export type CheckoutMethod = 'patch' | 'reserve-commit';

/** Clients writing to random pets from 1..pets, each one write at a time, for the warm-up and then the window. */
export interface CheckoutJob {
  baseUrl: string;
  authorization: string;
  method: CheckoutMethod;
  clients: number;
  pets: number;
  warmupSeconds: number;
  durationSeconds: number;
}

/** What one job did; rates count the writes finished inside the window only. */
export interface CheckoutResult {
  /** Writes done inside the window: PATCHes answered 200, or checkouts whose commit answered 200. */
  done: number;
  perSecond: number;
  /** Requests answered inside the window (a checkout is two). */
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  /** Every checkout committed in the job (warm-up and the end's in flight included), by petId - 1; for PATCH, empty. */
  soldByPet: number[];
  /** Writes whose request got no answer: applied or not, nobody knows. */
  unknown: number;
  /** Answers other than the expected ones, as "POST reservations 409" → count. */
  refused: Record<string, number>;
  firstRefusal?: string;
}

type Outcome = { done: true; requests: number } | { done: false; refused: string; body: string } | { done: false; unknown: true };

/**
 * `clients` clients each writing one random pet at a time until the window ends; a write under way
 * then finishes (a checkout its commit too), so every unit committed is in soldByPet and no hold is
 * left behind by a window's end.
 */
export async function runCheckouts(job: CheckoutJob): Promise<CheckoutResult> {
  const agent = agentFor(job.baseUrl, job.clients);
  const start = performance.now();
  const windowStart = start + job.warmupSeconds * 1000;
  const end = windowStart + job.durationSeconds * 1000;
  const soldByPet = new Array<number>(job.method === 'patch' ? 0 : job.pets).fill(0);
  const refused: Record<string, number> = {};
  const latencies: number[] = [];
  let firstRefusal: string | undefined;
  let done = 0;
  let requests = 0;
  let unknown = 0;
  let counter = 0;
  const send = (method: string, path: string, body?: string) => call(agent, job.baseUrl, job.authorization, method, path, body).catch(() => undefined);

  const writeOne = async (petId: number): Promise<Outcome> => {
    if (job.method === 'patch') {
      // A count that differs from the last, so every PATCH changes the entry.
      const answer = await send('PATCH', `/v1/inventory/${petId}`, JSON.stringify({ quantity: 1_000_000 + (counter++ % 1_000_000) }));
      if (!answer) return { done: false, unknown: true };
      return answer.status === 200 ? { done: true, requests: 1 } : { done: false, refused: `PATCH ${answer.status}`, body: answer.body };
    }
    const made = await send('POST', '/v1/reservations', JSON.stringify({ items: [{ petId, quantity: 1 }] }));
    if (!made) return { done: false, unknown: true };
    if (made.status !== 201) return { done: false, refused: `POST reservations ${made.status}`, body: made.body };
    const { id } = JSON.parse(made.body) as { id: string };
    const committed = await send('POST', `/v1/reservations/${id}/commit`);
    if (!committed) return { done: false, unknown: true };
    return committed.status === 200 ? { done: true, requests: 2 } : { done: false, refused: `POST commit ${committed.status}`, body: committed.body };
  };

  const client = async () => {
    while (performance.now() < end) {
      const petId = 1 + Math.floor(Math.random() * job.pets);
      const began = performance.now();
      const outcome = await writeOne(petId);
      const at = performance.now();
      if (outcome.done) {
        if (job.method === 'reserve-commit') soldByPet[petId - 1]!++;
        if (at >= windowStart && at < end) {
          done++;
          requests += outcome.requests;
          latencies.push(at - began);
        }
      } else if ('unknown' in outcome) unknown++;
      else {
        refused[outcome.refused] = (refused[outcome.refused] ?? 0) + 1;
        firstRefusal ??= `${outcome.refused}: ${outcome.body.slice(0, 200)}`;
      }
    }
  };
  await Promise.all(Array.from({ length: job.clients }, client));
  const sorted = Float64Array.from(latencies).sort();
  return {
    done,
    perSecond: done / job.durationSeconds,
    requestsPerSecond: requests / job.durationSeconds,
    p50Ms: percentile(sorted, 50),
    p99Ms: percentile(sorted, 99),
    soldByPet,
    unknown,
    refused,
    ...(firstRefusal === undefined ? {} : { firstRefusal }),
  };
}
