import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { openStore } from '../src/store/open.js';
import type { Backend } from './databases.js';
import type { BenchOptions } from './options.js';
import { CLOCK_TICKS, cpuTicks } from './processes.js';
import type { Check, Row } from './report.js';
import { startServer } from './servers.js';
import { bareCpu, bareDeliveries, cpuAgainst, databaseWithEndpoints, Receiver, WEBHOOK_TARGETS } from './webhooks.js';

/** Pets the changes are spread over, and changes made: the case (2,000 changes over 1,000 pets). */
const PETS = 1000;
const CHANGES = 2000;
/** The receivers' answer times compared, in ms. */
const DELAYS = [0, 20, 100] as const;
/** maxInFlight compared: strict seq order, and the default of a new endpoint. */
const IN_FLIGHT = [1, 16] as const;
/** One at a time, a slow receiver would take minutes for all of them: this many events are enough for its rate. */
const STRICT_EVENTS: Record<(typeof DELAYS)[number], number> = { 0: CHANGES, 20: 200, 100: 40 };
/**
 * With the receiver answering at once, 2,000 deliveries take well under a second, much of it the
 * HTTP client's first compile: those rows send this many (over the same pets) and time the rate and
 * the CPU from the WARMUP-th delivery, as a service that has been up for a while delivers.
 */
const AT_ONCE_EVENTS = 10_000;
/** Deliveries before the rate and the CPU are timed, in the rows answering at once. */
const WARMUP = 1000;
/** The floor at 16 in flight and 100 ms: at least this share of 16 / 0.1 s. */
const SLOW_SHARE = 0.8;

/**
 * Deliveries per second to one endpoint whose receiver answers in 0, 20 and 100 ms, with
 * maxInFlight 1 and 16, side by side: the events are committed (two batches of 1,000 pets each)
 * before the server starts, then timed from the first delivery's arrival to the last one's answer;
 * with the receiver answering at once, the server's CPU per delivery against the bare sender's.
 */
export async function paceRows(backend: Backend, options: BenchOptions, notes: string[]): Promise<Row[]> {
  const scenario = 'deliveries to one endpoint by answer time and maxInFlight';
  const rows: Row[] = [];
  let bare: number | undefined;
  let event = '';
  for (const delayMs of DELAYS) {
    for (const maxInFlight of IN_FLIGHT) {
      const events = delayMs === 0 ? AT_ONCE_EVENTS : maxInFlight === 1 ? STRICT_EVENTS[delayMs] : CHANGES;
      const run = await paceRun(backend, delayMs, maxInFlight, events);
      event = run.event;
      const checks: Check[] = [{ text: `${Math.round(run.perSecond).toLocaleString('en-US')} deliveries/s` }];
      if (delayMs === 0 && maxInFlight === 16) checks[0] = { ...checks[0]!, target: '≥ 5,000', met: run.perSecond >= 5000 };
      if (delayMs === 100 && maxInFlight === 16) {
        const floor = SLOW_SHARE * (16 / 0.1);
        checks[0] = { ...checks[0]!, target: `≥ ${floor}`, met: run.perSecond >= floor };
      }
      if (run.cpuUs !== undefined) {
        checks.push({ text: `${run.cpuUs.toFixed(0)} µs CPU/delivery` });
        if (bare === undefined) {
          const report = await bareDeliveries('bench/bare-sender-undici.ts', run.url, event, AT_ONCE_EVENTS - 1, WARMUP);
          bare = bareCpu(report);
          notes.push(`${scenario}: the bare sender (undici) sent ${report.deliveries.toLocaleString('en-US')} deliveries one at a time to a receiver answering at once: ${bare.toFixed(0)} µs CPU a delivery`);
        }
        checks.push(cpuAgainst(run.cpuUs, bare, 'bare sender (undici)', maxInFlight === 1 ? WEBHOOK_TARGETS.cpuOfBareSender : undefined));
      }
      rows.push({ scenario, server: `service, answers in ${delayMs} ms, maxInFlight ${maxInFlight} (${events.toLocaleString('en-US')} events)`, checks });
      run.close();
    }
  }
  notes.push(
    `${scenario}: ${CHANGES.toLocaleString('en-US')} changes over ${PETS.toLocaleString('en-US')} pets (with maxInFlight 1 and a slow receiver, the first ${STRICT_EVENTS[20]} or ${STRICT_EVENTS[100]} of them), ` +
      'committed before the server starts; timed from the first delivery reaching the receiver (in the bench process) to the last one answered; ' +
      `with the receiver answering at once, ${AT_ONCE_EVENTS.toLocaleString('en-US')} changes over the same pets, the rate and the server's CPU (all threads, /proc/PID/stat) from the ${WARMUP.toLocaleString('en-US')}th delivery to the last. ` +
      `Targets: ≥ 5,000 a second answering at once, ≥ ${SLOW_SHARE} × 16 / 0.1 s answering in 100 ms, both at maxInFlight 16` +
      (options.quick ? '; --quick runs the same counts' : ''),
  );
  return rows;
}

interface PaceRun {
  perSecond: number;
  cpuUs: number | undefined;
  url: string;
  event: string;
  close(): void;
}

async function paceRun(backend: Backend, delayMs: number, maxInFlight: number, events: number): Promise<PaceRun> {
  const receiver = new Receiver();
  receiver.delayMs = delayMs;
  const url = await receiver.listen();
  const { databaseUrl, key } = await databaseWithEndpoints(backend, `webhooks_pace_${delayMs}_${maxInFlight}`, PETS, url, 1, maxInFlight);
  await commitChanges(databaseUrl, events);
  let first = 0;
  let last = 0;
  let warmTicks: number | undefined;
  let lastTicks: number | undefined;
  let event = '';
  const server = await startServer('service', { databaseUrl, key, env: { WEBHOOKS_ALLOW_PRIVATE: 'true' } });
  try {
    const all = new Promise<void>((resolve) => {
      receiver.onDelivery = (body, at) => {
        if (receiver.count === (delayMs === 0 ? WARMUP : 1)) first = at;
        last = performance.now();
        event = body;
        if (receiver.count === WARMUP) warmTicks = cpuTicks(server.pid);
        if (receiver.count < events) return;
        lastTicks = cpuTicks(server.pid);
        resolve();
      };
    });
    await Promise.race([all, sleep(300_000).then(() => Promise.reject(new Error(`only ${receiver.count} of ${events} deliveries in 300 s`)))]);
    const timed = delayMs === 0 && events > WARMUP && warmTicks !== undefined && lastTicks !== undefined;
    return {
      perSecond: (events - (delayMs === 0 ? WARMUP : 1)) / ((last - first) / 1000),
      cpuUs: timed ? (((lastTicks! - warmTicks!) / CLOCK_TICKS.perSecond) * 1e6) / (events - WARMUP) : undefined,
      url,
      event,
      close: () => receiver.close(),
    };
  } finally {
    await server.stop();
  }
}

/** `count` changes in batches of PETS (each pet once a batch), committed through the service's own store. */
async function commitChanges(databaseUrl: string, count: number): Promise<void> {
  const store = await openStore(databaseUrl);
  try {
    for (let done = 0; done < count; done += PETS) {
      const changes = Array.from({ length: Math.min(PETS, count - done) }, (_, i) => ({ petId: BigInt(i + 1), quantity: done + i + 1, reason: null }));
      await store.changes.applyBatch({ source: 'api', keyId: 'key_bench', keyName: 'bench', requestId: `bench-pace-${done}`, at: new Date(), changes });
    }
  } finally {
    await store.close();
  }
}
