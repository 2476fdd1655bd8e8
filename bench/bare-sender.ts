/**
 * The floor of a webhook delivery: one event POSTed at a time to one endpoint over one kept-alive
 * connection, signed to Standard Webhooks with the service's own signing (src/webhooks/signing.ts),
 * each answer read before the next is sent, and nothing else: no store to read the event from, no
 * delivery log, no JSON made per event (the body is the one given), no address guard, and no HTTP
 * client: the request written as bytes on a socket, an answer taken to end at its blank line (the
 * bench's receiver answers 204, without a body). What a delivery costs a core with nothing else
 * around it, beside what the service's costs (webhooks.ts, "deliveries to one endpoint"); the same
 * over the service's own HTTP client is bare-sender-undici.ts.
 *
 * Env and output: bare-sender-input.ts. Exits 1 on an answer not 2xx.
 */
import { connect } from 'node:net';
import { performance } from 'node:perf_hooks';
import { webhookHeaders } from '../src/webhooks/signing.js';
import { bareSenderInput, type BareSenderReport } from './bare-sender-input.js';

const { url, body, count, warmup, secrets } = bareSenderInput();
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
/** Starts the timing: at the connection, or once the warm-up's deliveries were answered. */
const startTiming = (): void => {
  started = performance.now();
  cpu = process.cpuUsage();
};
socket.on('connect', () => {
  if (warmup === 0) startTiming();
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
  if (sent === warmup) startTiming();
  if (sent < count) return void socket.write(request(sent++));
  const used = process.cpuUsage(cpu);
  const report: BareSenderReport = { deliveries: count - warmup, seconds: (performance.now() - started) / 1000, cpuUs: used.user + used.system };
  process.stdout.write(`${JSON.stringify(report)}\n`);
  socket.end();
});
socket.on('error', (err) => {
  process.stderr.write(`bare sender: ${err.message}\n`);
  process.exit(1);
});
