/**
 * The floor of a webhook delivery: one event POSTed at a time to one endpoint over one kept-alive
 * connection, signed to Standard Webhooks with the service's own signing (src/webhooks/signing.ts),
 * each answer read before the next is sent, and nothing else: no store to read the event from, no
 * delivery log, no JSON made per event (the body is the one given), no address guard. What a
 * delivery costs a core with nothing else around it, beside what the service's costs
 * (webhooks.ts, "deliveries to one endpoint").
 *
 * Env: HOOK_URL (http://host:port/path), BARE_EVENT (the body, an event as the service delivers it),
 * COUNT (deliveries, at least 1), BARE_SECRET (optional: the signing secret, else a new one). Prints
 * one BareSenderReport as JSON when done; exits 1 on an answer not 2xx.
 */
import { connect } from 'node:net';
import { performance } from 'node:perf_hooks';
import { webhookHeaders } from '../src/webhooks/signing.js';
import { newWebhookSecret } from '../src/webhooks/secret.js';
import { requiredEnv } from './env.js';

/** What the sender prints when done, one line of JSON: the deliveries, their wall time, and its CPU (user + system, all threads) over them. */
export interface BareSenderReport {
  deliveries: number;
  seconds: number;
  cpuUs: number;
}

const url = new URL(requiredEnv('HOOK_URL'));
const body = requiredEnv('BARE_EVENT');
const count = Number(requiredEnv('COUNT'));
if (!Number.isInteger(count) || count < 1) throw new Error('COUNT must be a positive integer');
// A test passes its own secret to verify the signatures; the bench lets each run make one.
const secrets = [process.env.BARE_SECRET ?? newWebhookSecret()];
const length = Buffer.byteLength(body);

/** One attempt of event `i`: the request whole, written in one write. */
const request = (i: number): string => {
  const headers = webhookHeaders({ id: `evt_${i}`, body }, secrets, new Date());
  let head = `POST ${url.pathname} HTTP/1.1\r\nhost: ${url.host}\r\ncontent-length: ${length}\r\n`;
  for (const name in headers) head += `${name}: ${headers[name]}\r\n`;
  return `${head}\r\n${body}`;
};

const socket = connect(Number(url.port), url.hostname);
socket.setNoDelay(true);
socket.setEncoding('latin1');
let sent = 0;
let pending = '';
let started = 0;
let cpu: NodeJS.CpuUsage | undefined;
socket.on('connect', () => {
  started = performance.now();
  cpu = process.cpuUsage();
  socket.write(request(sent++));
});
socket.on('data', (chunk: string) => {
  pending += chunk;
  // The receiver answers 204 with no body: an answer ends with its head.
  const end = pending.indexOf('\r\n\r\n');
  if (end === -1) return;
  const status = Number(pending.slice(9, 12));
  pending = pending.slice(end + 4);
  if (status < 200 || status > 299) {
    process.stderr.write(`bare sender: the endpoint answered ${status}\n`);
    process.exit(1);
  }
  if (sent < count) return void socket.write(request(sent++));
  const used = process.cpuUsage(cpu);
  const report: BareSenderReport = { deliveries: count, seconds: (performance.now() - started) / 1000, cpuUs: used.user + used.system };
  process.stdout.write(`${JSON.stringify(report)}\n`);
  socket.end();
});
socket.on('error', (err) => {
  process.stderr.write(`bare sender: ${err.message}\n`);
  process.exit(1);
});
