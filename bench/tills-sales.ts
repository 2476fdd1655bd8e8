import { performance } from 'node:perf_hooks';
import { percentile } from './load-spec.js';
import { agentFor, call, type SalesJob, type SalesResult } from './tills-jobs.js';

/** What one sale came to: sold, refused (why, and its body), unknown (no answer to the change), or abandoned at the end. */
type Outcome = { sold: true } | { sold: false; refused: string; body: string } | { sold: false; unknown: true } | { sold: false; abandoned: true };

const SALE = JSON.stringify({ delta: -1, reason: 'sold' });

/**
 * `clients` tills, each selling one random pet at a time until the window ends; a sale under way
 * then finishes its request in flight, and counts if that request sold (a 412 or a GET is given
 * up: nothing was taken off), so every count taken off is in soldByPet.
 */
export async function runSales(job: SalesJob): Promise<SalesResult> {
  const agent = agentFor(job.baseUrl, job.clients);
  const start = performance.now();
  const windowStart = start + job.warmupSeconds * 1000;
  const end = windowStart + job.durationSeconds * 1000;
  const soldByPet = new Array<number>(job.pets).fill(0);
  const refused: Record<string, number> = {};
  const latencies: number[] = [];
  let firstRefusal: string | undefined;
  let sales = 0;
  let retries = 0;
  let unknown = 0;
  const inWindow = (at: number) => at >= windowStart && at < end;

  const get = (petId: number) => call(agent, job.baseUrl, job.authorization, 'GET', `/v1/inventory/${petId}`);
  const sellOne = async (petId: number): Promise<Outcome> => {
    const path = `/v1/inventory/${petId}`;
    if (job.method === 'adjustment') {
      const answer = await call(agent, job.baseUrl, job.authorization, 'POST', `${path}/adjustments`, SALE).catch(() => undefined);
      if (!answer) return { sold: false, unknown: true };
      return answer.status === 200 ? { sold: true } : { sold: false, refused: `POST adjustments ${answer.status}`, body: answer.body };
    }
    for (let attempt = 0; ; attempt++) {
      if (attempt > 0 && performance.now() >= end) return { sold: false, abandoned: true };
      const read = await get(petId).catch((err: Error) => ({ status: 0, etag: undefined, body: err.message }));
      if (read.status !== 200 || read.etag === undefined) return { sold: false, refused: `GET ${read.status}${read.etag === undefined ? ' without ETag' : ''}`, body: read.body };
      const { quantity } = JSON.parse(read.body) as { quantity: number };
      const body = JSON.stringify({ quantity: quantity - 1, reason: 'sold' });
      const answer = await call(agent, job.baseUrl, job.authorization, 'PATCH', path, body, read.etag).catch(() => undefined);
      if (!answer) return { sold: false, unknown: true };
      if (answer.status === 200) return { sold: true };
      if (answer.status !== 412) return { sold: false, refused: `PATCH ${answer.status}`, body: answer.body };
      if (inWindow(performance.now())) retries++;
    }
  };

  const till = async () => {
    while (performance.now() < end) {
      const petId = 1 + Math.floor(Math.random() * job.pets);
      const began = performance.now();
      const outcome = await sellOne(petId);
      const at = performance.now();
      if (outcome.sold) {
        soldByPet[petId - 1]!++;
        if (inWindow(at)) {
          sales++;
          latencies.push(at - began);
        }
      } else if ('unknown' in outcome) unknown++;
      else if ('refused' in outcome) {
        refused[outcome.refused] = (refused[outcome.refused] ?? 0) + 1;
        firstRefusal ??= `${outcome.refused}: ${outcome.body.slice(0, 200)}`;
      }
    }
  };
  await Promise.all(Array.from({ length: job.clients }, till));
  const sorted = Float64Array.from(latencies).sort();
  return {
    sales,
    perSecond: sales / job.durationSeconds,
    retries,
    p50Ms: percentile(sorted, 50),
    p99Ms: percentile(sorted, 99),
    soldByPet,
    unknown,
    refused,
    ...(firstRefusal === undefined ? {} : { firstRefusal }),
  };
}
