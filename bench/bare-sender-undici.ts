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
 * BARE_RATE (optional): the timed deliveries come due evenly at that many a second instead, each
 * sent once due and one of the BARE_IN_FLIGHT is free, as a service's endpoint gets the events of
 * changes paced at that rate: the same work at the same pace (a delivery that comes alone costs
 * more than one of many back to back).
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

const rate = process.env.BARE_RATE === undefined ? undefined : Number(process.env.BARE_RATE);
if (rate !== undefined && !(rate > 0)) throw new Error('BARE_RATE must be a positive number');

/** Delivers the events from `next` on until COUNT, one at a time: `inFlight` of these run at once. */
let next = untimed;
async function sendInTurn(): Promise<void> {
  while (next < count) await deliver(next++);
}

/**
 * Delivers the events from `next` on until COUNT, event k due k / `perSecond` seconds after the
 * start, at most `inFlight` open: those due are sent at each wake-up (a timer's, about a
 * millisecond apart, as a service's commits come a batch at a time), or when an answer frees a slot.
 */
async function sendPaced(perSecond: number): Promise<void> {
  const start = performance.now();
  const first = next;
  const open = new Set<Promise<void>>();
  while (next < count) {
    const wait = start + ((next - first) * 1000) / perSecond - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    if (open.size >= inFlight) await Promise.race(open);
    const sending: Promise<void> = deliver(next++).finally(() => open.delete(sending));
    open.add(sending);
  }
  await Promise.all(open);
}

for (let i = 0; i < untimed; i++) await deliver(i);
const started = performance.now();
const cpu = process.cpuUsage();
await (rate === undefined ? Promise.all(Array.from({ length: inFlight }, sendInTurn)) : sendPaced(rate));
const used = process.cpuUsage(cpu);
const report: BareSenderReport = { deliveries: count - untimed, seconds: (performance.now() - started) / 1000, cpuUs: used.user + used.system };
process.stdout.write(`${JSON.stringify(report)}\n`);
transport.close();
