/**
 * The bare sender over the service's own HTTP client (src/webhooks/transport.ts: undici, a kept-alive
 * connection, the answer parsed and read within its limits), signed by the service's own signing,
 * one POST at a time, each answer read before the next is sent; and nothing else: no store, no
 * delivery log, no JSON made per event, no endpoint worker. What the same work as a service's
 * delivery costs a core, its HTTP client included: beside it the service's CPU a delivery is what
 * the store, the delivery log and the worker's bookkeeping add (webhooks.ts).
 *
 * Env and output: bare-sender-input.ts; at least the first delivery, which connects and readies
 * undici's parser, goes before the timing (the socket one's timing starts connected too).
 * BARE_IN_FLIGHT (optional, 1 by default): the timed deliveries go that many at a time, each
 * sender's next sent once its last was answered, as an endpoint's worker sends up to its
 * maxInFlight at once: the same work as the service delivering to such an endpoint.
 * Exits 1 on an answer not 2xx.
 */
import { performance } from 'node:perf_hooks';
import { webhookHeaders } from '../src/webhooks/signing.js';
import { Transport } from '../src/webhooks/transport.js';
import { bareSenderInput, type BareSenderReport } from './bare-sender-input.js';

const { url, body, count, warmup, secrets } = bareSenderInput();
const untimed = Math.max(1, warmup);
const inFlight = Number(process.env.BARE_IN_FLIGHT ?? 1);
if (!Number.isInteger(inFlight) || inFlight < 1) throw new Error('BARE_IN_FLIGHT must be a positive integer');
// The service's settings (sender.ts), private addresses allowed as the bench's server has them.
const transport = new Transport({ timeoutMs: 10_000, allowPrivate: true, readLimit: 64 * 1024, keepLimit: 1024, idleMs: 4000, closedMessage: 'closed' });
const path = `${url.pathname}${url.search}`;

/** Delivers event `i`; exits 1 on anything but a 2xx. */
async function deliver(i: number): Promise<void> {
  const id = `evt_${i}`;
  const result = await transport.exchange(url.origin, path, body, webhookHeaders({ id, body }, secrets, new Date()), 10_000);
  if ('status' in result && result.status >= 200 && result.status <= 299) return;
  process.stderr.write(`bare sender: ${'status' in result ? `the endpoint answered ${result.status}` : result.error.message}\n`);
  process.exit(1);
}

/** Delivers the events from `next` on until COUNT, one at a time: `inFlight` of these run at once. */
let next = untimed;
async function sendInTurn(): Promise<void> {
  while (next < count) await deliver(next++);
}

for (let i = 0; i < untimed; i++) await deliver(i);
const started = performance.now();
const cpu = process.cpuUsage();
await Promise.all(Array.from({ length: inFlight }, sendInTurn));
const used = process.cpuUsage(cpu);
const report: BareSenderReport = { deliveries: count - untimed, seconds: (performance.now() - started) / 1000, cpuUs: used.user + used.system };
process.stdout.write(`${JSON.stringify(report)}\n`);
transport.close();
