import { once } from 'node:events';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { DEFAULT_MAX_IN_FLIGHT } from '../src/domain/webhook.js';
import { openStore } from '../src/store/open.js';
import { newEndpointId, newWebhookSecret } from '../src/webhooks/secret.js';
import type { BareSenderReport } from './bare-sender-input.js';
import { createDatabase, type Backend } from './databases.js';
import { patch } from './events.js';
import type { LoadGenerator } from './load.js';
import { percentile } from './load-spec.js';
import type { BenchOptions } from './options.js';
import { ratio, type Check, type Row } from './report.js';
import { PATCH_CONNECTIONS } from './scenarios.js';
import { seedDatabase } from './seed.js';
import { alternateRounds, bestRun, eachRun, roundsOf, roundsText, type Side } from './side-by-side.js';
import { CLOCK_TICKS, cpuTicks, spawnChild, TSX_NODE } from './processes.js';
import { startServer } from './servers.js';

/** The floor: one endpoint that answers at once receives at least this many events a second. */
/** A burst never holds up the API's answers (decisions 10.14): PATCH throughput beside busy endpoints, against none, at least this. */
export const WEBHOOK_TARGETS = { deliveriesPerSecond: 1000, cpuOfBareSender: 1.5, patchBesideDeliveries: 0.8 } as const;

/** Endpoints registered on the loaded server of the PATCH comparison. */
const ENDPOINTS = 10;
/** Pause between one PATCH's delivery and the next PATCH. */
const LAG_PACE_MS = 10;
/** Past this, a PATCH's delivery counts as missing. */
const LAG_WAIT_MS = 5000;
/**
 * Deliveries (at most; a quarter of a small backlog) before the CPU a delivery is timed, the service's
 * and the bare senders' alike: the first thousand include compiling the HTTP client's code, once a process.
 */
const WARMUP_MAX = 1000;
/** No delivery for this long: a server's backlog is delivered (one at a time, each answered at once). */
export const QUIET_MS = 500;
/** The longest wait for a backlog to be delivered. */
export const DRAIN_MAX_MS = 180_000;
/** Every server here may deliver to the bench's own receiver on loopback. */
const DELIVERING = { WEBHOOKS_ALLOW_PRIVATE: 'true' };


/** A receiver in this process: answers each delivery 204 at once (or holds it while `hold` is set), and tells `onDelivery`. */
export class Receiver {
  readonly #server: Server;
  hold: Promise<void> | undefined;
  /** Each answer waits this long (a receiver across a region, a serverless function). */
  delayMs = 0;
  onDelivery: (body: string, at: number) => void = () => {};
  /** Deliveries that reached it, held ones included. */
  arrived = 0;
  /** Deliveries it answered. */
  count = 0;

  constructor() {
    this.#server = createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (chunk: string) => (body += chunk));
      req.on('end', () => void this.#answer(body, res));
    });
    this.#server.keepAliveTimeout = 60_000;
  }

  async #answer(body: string, res: ServerResponse): Promise<void> {
    const at = performance.now();
    this.arrived++;
    if (this.hold) await this.hold;
    if (this.delayMs > 0) await sleep(this.delayMs);
    this.count++;
    this.onDelivery(body, at);
    res.writeHead(204).end();
  }

  async listen(): Promise<string> {
    this.#server.listen(0, '127.0.0.1');
    await once(this.#server, 'listening');
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}/hooks`;
  }

  /** Resolves once no delivery has come for `quietMs`: true, or false when that took longer than `maxMs`. */
  async quiet(quietMs: number, maxMs: number): Promise<boolean> {
    const started = Date.now();
    let seen = -1;
    while (this.count !== seen) {
      if (Date.now() - started > maxMs) return false;
      seen = this.count;
      await sleep(quietMs);
    }
    return true;
  }

  close(): void {
    this.#server.closeAllConnections();
    this.#server.close();
  }
}

/** A seeded database with `endpoints` endpoints for `url`; its key. */
export async function databaseWithEndpoints(backend: Backend, name: string, size: number, url: string, endpoints: number, maxInFlight = 1): Promise<{ databaseUrl: string; key: string }> {
  const databaseUrl = await createDatabase(backend, name);
  const key = await seedDatabase(databaseUrl, size);
  const store = await openStore(databaseUrl);
  try {
    for (let i = 0; i < endpoints; i++) {
      await store.webhookEndpoints.addEndpoint({ id: newEndpointId(), url: `${url}/${i}`, description: 'bench', secret: newWebhookSecret(), createdAt: new Date(), maxInFlight });
    }
  } finally {
    await store.close();
  }
  return { databaseUrl, key };
}

/**
 * The endpoint's first delivery is held by the receiver while a PATCH load builds a backlog
 * behind it (one at a time: nothing else is sent meanwhile); then it is released, and the rest
 * are timed from the release to the last, with the server's CPU over them; then the bare sender
 * sends as many beside it: what a delivery costs with nothing else around it.
 */
export async function deliveryRateRows(backend: Backend, options: BenchOptions, load: LoadGenerator, notes: string[]): Promise<Row[]> {
  const scenario = 'deliveries to one endpoint answering at once';
  const receiver = new Receiver();
  let release!: () => void;
  receiver.hold = new Promise((resolve) => (release = resolve));
  const url = await receiver.listen();
  const { databaseUrl, key } = await databaseWithEndpoints(backend, 'webhooks_rate', 1000, url, 1);
  // The held delivery must outlast the load that builds the backlog.
  const server = await startServer('service', { databaseUrl, key, env: { ...DELIVERING, WEBHOOK_TIMEOUT_MS: '300000' } });
  try {
    const result = await load.run({
      baseUrl: server.baseUrl,
      method: 'PATCH',
      authorization: `Bearer ${key}`,
      petCount: 1000,
      connections: PATCH_CONNECTIONS,
      warmupSeconds: 0,
      durationSeconds: options.smoke ? 0.25 : options.quick ? 1 : 3,
    });
    const backlog = result.ok;
    const warmup = Math.min(WARMUP_MAX, Math.floor(backlog / 4));
    let last = 0;
    let warmTicks: number | undefined;
    let lastTicks: number | undefined;
    let event = '';
    const all = new Promise<void>((resolve) => {
      receiver.onDelivery = (body, at) => {
        last = at;
        event = body;
        // The held first one, then the warm-up's.
        if (receiver.count === 1 + warmup) warmTicks = cpuTicks(server.pid);
        if (receiver.count < backlog) return;
        lastTicks = cpuTicks(server.pid);
        resolve();
      };
    });
    // The held first delivery has reached the receiver (the dispatcher claims the endpoint at start).
    while (receiver.arrived === 0) await sleep(10);
    const released = performance.now();
    receiver.hold = undefined;
    release();
    await Promise.race([all, sleep(120_000).then(() => Promise.reject(new Error(`only ${receiver.count} of ${backlog} deliveries in 120 s`)))]);
    const delivered = backlog - 1;
    const perSecond = delivered / ((last - released) / 1000);
    // The server did nothing else meanwhile (the load had ended): its CPU over the drain past the warm-up is those deliveries'.
    const timed = delivered - warmup;
    const cpuUs = warmTicks === undefined || lastTicks === undefined ? undefined : ((lastTicks - warmTicks) / CLOCK_TICKS.perSecond) * 1e6;
    // PATCHes still in flight when the load stopped made events too: the bare sender starts once those are delivered.
    await receiver.quiet(QUIET_MS, DRAIN_MAX_MS);
    const bare = await bareDeliveries('bench/bare-sender.ts', url, event, delivered, warmup);
    const bareUndici = await bareDeliveries('bench/bare-sender-undici.ts', url, event, delivered, warmup);
    notes.push(
      `${scenario}: ${backlog.toLocaleString('en-US')} events from a PATCH load (${PATCH_CONNECTIONS} connections) queued behind a held first delivery, ` +
        `then delivered one at a time over one keep-alive connection to a receiver in the bench process; timed from the release to the last 2xx, ` +
        `the server's CPU (all threads, /proc/PID/stat) read once ${warmup.toLocaleString('en-US')} of them were delivered (its code warm: the first include compiling it) and at the last. ` +
        'The bare senders (on the server core) send as many, the same number before their timing starts, one at a time ' +
        'over one kept-alive connection to the same receiver, each signed by the service\'s own signing, with the body of the service\'s last delivery as it is: ' +
        'no store read, no delivery log, no JSON made per event: what a delivery costs a core with nothing else around it; the socket one writes ' +
        'the bytes and takes an answer to end at its blank line, the undici one (bare-sender-undici.ts) goes through the service\'s own HTTP client ' +
        '(undici, a kept-alive connection, the answer parsed), so the service\'s CPU against it is what the store, the delivery log and the worker add',
    );
    const cpuPerDelivery = cpuUs === undefined ? undefined : cpuUs / timed;
    return [
      {
        scenario,
        server: `service (${backlog.toLocaleString('en-US')} events)`,
        checks: [
          { text: `${Math.round(perSecond).toLocaleString('en-US')} deliveries/s`, target: `≥ ${WEBHOOK_TARGETS.deliveriesPerSecond}`, met: perSecond >= WEBHOOK_TARGETS.deliveriesPerSecond },
          { text: cpuPerDelivery === undefined ? 'CPU/delivery unknown (no /proc)' : `${cpuPerDelivery.toFixed(0)} µs CPU/delivery` },
          cpuAgainst(cpuPerDelivery, bareCpu(bareUndici), 'bare sender (undici)', WEBHOOK_TARGETS.cpuOfBareSender),
          cpuAgainst(cpuPerDelivery, bareCpu(bare), 'bare sender (socket)'),
          ratio(perSecond / perSecondOf(bare), 'bare sender (socket)'),
        ],
      },
      bareRow(scenario, 'bare sender (undici)', bareUndici),
      bareRow(scenario, 'bare sender (socket)', bare),
    ];
  } finally {
    release();
    receiver.close();
    await server.stop();
  }
}

/** A bare sender's CPU a delivery. */
export const bareCpu = (report: BareSenderReport): number => report.cpuUs / report.deliveries;
/** A bare sender's deliveries a second. */
const perSecondOf = (report: BareSenderReport): number => report.deliveries / report.seconds;

/** A bare sender's row: its rate and its CPU a delivery. */
function bareRow(scenario: string, name: string, report: BareSenderReport): Row {
  return {
    scenario,
    server: `${name} (${report.deliveries.toLocaleString('en-US')} events)`,
    checks: [{ text: `${Math.round(perSecondOf(report)).toLocaleString('en-US')} deliveries/s` }, { text: `${bareCpu(report).toFixed(0)} µs CPU/delivery` }],
  };
}

/** The service's CPU a delivery as a multiple of a bare sender's, met when at most `atMost` (no target when absent). */
export function cpuAgainst(service: number | undefined, bare: number, of: string, atMost?: number): Check {
  const target = atMost === undefined ? {} : { target: `≤ ${atMost}` };
  if (service === undefined) return { text: `CPU against ${of} unknown (no /proc)`, ...target };
  const value = service / bare;
  return { text: `${value.toFixed(2)}× ${of}'s CPU`, ...target, ...(atMost === undefined ? {} : { met: value <= atMost }) };
}

/** `count` deliveries of `event` to `url` by a bare sender (`file`), pinned to the server core, with `more` in its environment (BARE_IN_FLIGHT): what it printed. */
export async function bareDeliveries(file: string, url: string, event: string, count: number, warmup: number, more: NodeJS.ProcessEnv = {}): Promise<BareSenderReport> {
  const env = { ...process.env, HOOK_URL: url, BARE_EVENT: event, COUNT: String(count), BARE_WARMUP: String(warmup), ...more };
  const sender = spawnChild([...TSX_NODE, file], { core: 'server', env });
  const how = await sender.exited;
  if (how !== '0') throw new Error(`the bare sender exited with ${how}:\n${sender.output()}`);
  return JSON.parse(sender.output().trim().split('\n').at(-1)!) as BareSenderReport;
}

/** `count` PATCHes one at a time: the time from each 200 (its body read) to its delivery, matched by X-Request-Id, on this process's one clock. */
export async function latencyRow(backend: Backend, count: number, notes: string[]): Promise<Row> {
  const scenario = 'PATCH 200 → its webhook delivered';
  const receiver = new Receiver();
  const url = await receiver.listen();
  const { databaseUrl, key } = await databaseWithEndpoints(backend, 'webhooks_lag', 100, url, 1);
  const server = await startServer('service', { databaseUrl, key, env: DELIVERING });
  const waiting = new Map<string, (at: number) => void>();
  receiver.onDelivery = (body, at) => {
    const requestId = /"requestId":"([^"]+)"/.exec(body)?.[1];
    if (requestId) waiting.get(requestId)?.(at);
  };
  try {
    const afterOk: number[] = [];
    let missing = 0;
    for (let i = 0; i < count; i++) {
      const requestId = `bench-webhook-${i}`;
      const arrived = new Promise<number | undefined>((resolve) => {
        waiting.set(requestId, resolve);
        setTimeout(() => resolve(undefined), LAG_WAIT_MS).unref();
      });
      const answered = await patch(server.baseUrl, key, 1 + (i % 100), i % 1000, requestId);
      const at = await arrived;
      waiting.delete(requestId);
      if (at === undefined) missing++;
      else afterOk.push(at - answered);
      await sleep(LAG_PACE_MS);
    }
    if (afterOk.length === 0) throw new Error(`none of ${count} PATCHes was delivered within ${LAG_WAIT_MS / 1000} s`);
    if (missing > 0) notes.push(`${scenario}: ${missing} of ${count} deliveries did not arrive within ${LAG_WAIT_MS / 1000} s (the first waits for the dispatcher's first lease round), left out`);
    afterOk.sort((a, b) => a - b);
    notes.push(`${scenario}: ${count} PATCHes one at a time (${LAG_PACE_MS} ms apart once delivered), one endpoint, the receiver in this process, on its one clock`);
    return {
      scenario,
      server: `service (${afterOk.length} PATCHes)`,
      checks: [{ text: `median ${afterOk[afterOk.length >> 1]!.toFixed(2)} ms, p99 ${percentile(afterOk, 99).toFixed(2)} ms` }],
    };
  } finally {
    receiver.close();
    await server.stop();
  }
}

/**
 * Two servers up at once on databases seeded alike, one with ENDPOINTS endpoints (all answering
 * at once, from a receiver in the bench process) and one with none; PATCH loads alternated between
 * them, the best round of each compared.
 */
export async function throughputRows(backend: Backend, options: BenchOptions, load: LoadGenerator, notes: string[]): Promise<Row[]> {
  const size = options.sizes[1];
  const scenario = `PATCH random pet, ${size.toLocaleString('en-US')} entries`;
  const receiver = new Receiver();
  const url = await receiver.listen();
  const sides: Side[] = [];
  try {
    for (const [label, endpoints] of [
      [`service, ${ENDPOINTS} webhook endpoints (maxInFlight ${DEFAULT_MAX_IN_FLIGHT})`, ENDPOINTS],
      ['service, no webhook endpoint', 0],
    ] as const) {
      // The default of a new endpoint: its deliveries go 16 at a time, the most they can take from the requests.
      const { databaseUrl, key } = await databaseWithEndpoints(backend, `webhooks_load_${sides.length}`, size, url, endpoints, DEFAULT_MAX_IN_FLIGHT);
      sides.push({ label, key, server: await startServer('service', { databaseUrl, key, env: DELIVERING }), runs: [] });
    }
    await alternateRounds(sides, scenario, backend, options, load, notes);
    const [withEndpoints, without] = sides as [Side, Side];
    const best = bestRun;
    const each = eachRun;
    notes.push(
      `${scenario}: both servers up at once, ${PATCH_CONNECTIONS} connections; one uncounted warm-up round, then ${roundsText(roundsOf(options))} alternated, the best of each shown; ` +
        `req/s per round: with ${ENDPOINTS} endpoints ${each(withEndpoints)}; with none ${each(without)}. ` +
        `The ${ENDPOINTS} endpoints' receiver (this process) got ${receiver.count.toLocaleString('en-US')} deliveries during the loads; the deliveries share the server's core with its requests`,
    );
    return [
      { scenario, server: without.label, result: best(without), checks: [] },
      { scenario, server: withEndpoints.label, result: best(withEndpoints), checks: [ratio(best(withEndpoints).requestsPerSecond / best(without).requestsPerSecond, 'with none', WEBHOOK_TARGETS.patchBesideDeliveries)] },
    ];
  } finally {
    receiver.close();
    await Promise.all(sides.map((s) => s.server.stop()));
  }
}
