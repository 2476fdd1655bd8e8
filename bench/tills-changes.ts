import { performance } from 'node:perf_hooks';
import { agentFor, call, type ChangesJob, type ChangesResult } from './tills-jobs.js';

/**
 * Sets pets 1..pets to firstQuantity + petId - 1: in one POST /v1/inventory/batch, or one PATCH
 * each from `connections` clients over keep-alive. Throws on any answer but 200, or a batch whose
 * items are not the counts it set: a faster wrong answer measures nothing.
 */
export async function runChanges(job: ChangesJob): Promise<ChangesResult> {
  const quantityOf = (petId: number) => job.firstQuantity + petId - 1;
  const agent = agentFor(job.baseUrl, job.how === 'batch' ? 1 : job.connections);
  const send = (method: string, path: string, body: string) => call(agent, job.baseUrl, job.authorization, method, path, body);
  if (job.how === 'batch') {
    const changes = Array.from({ length: job.pets }, (_, i) => ({ petId: i + 1, quantity: quantityOf(i + 1) }));
    const body = JSON.stringify({ changes });
    const started = performance.now();
    const answer = await send('POST', '/v1/inventory/batch', body);
    const ms = performance.now() - started;
    if (answer.status !== 200) throw new Error(`POST /v1/inventory/batch answered ${answer.status}: ${answer.body.slice(0, 300)}`);
    const { items } = JSON.parse(answer.body) as { items: { petId: number; quantity: number }[] };
    const wrong = items.length === job.pets ? items.findIndex((item, i) => Number(item.petId) !== i + 1 || item.quantity !== quantityOf(i + 1)) : 0;
    if (wrong >= 0) throw new Error(`POST /v1/inventory/batch answered ${items.length} items for ${job.pets} changes, item ${wrong} being ${JSON.stringify(items[wrong])}`);
    return { ms };
  }
  let next = 1;
  const client = async () => {
    for (let petId = next++; petId <= job.pets; petId = next++) {
      const answer = await send('PATCH', `/v1/inventory/${petId}`, JSON.stringify({ quantity: quantityOf(petId) }));
      if (answer.status !== 200) throw new Error(`PATCH /v1/inventory/${petId} answered ${answer.status}: ${answer.body.slice(0, 300)}`);
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: job.connections }, client));
  return { ms: performance.now() - started };
}
