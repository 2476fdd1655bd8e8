import { request } from 'node:http';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { BENCH_WITHOUT_EVENT_LOG } from '../src/cli/serve.js';
import { createDatabase, type Backend } from './databases.js';
import type { LoadGenerator } from './load.js';
import { percentile } from './load-spec.js';
import type { BenchOptions } from './options.js';
import { ratio, type Row, type Section } from './report.js';
import { PATCH_CONNECTIONS } from './scenarios.js';
import { seedDatabase } from './seed.js';
import { alternateRounds, bestRun, eachRun, roundsOf, roundsText, type Side } from './side-by-side.js';
import { startServer } from './servers.js';
import { StreamReader, type Arrival } from './stream-reader.js';

/** The issue's bound on what the log may cost a PATCH: with it, at least 0.9 of the req/s without it. */
export const EVENTS_TARGETS = { withLogVsWithout: 0.9 } as const;

/** Pause between one PATCH's event and the next PATCH: one at a time, never a queue. */
const LAG_PACE_MS = 10;
/** Past this, a PATCH's event counts as missing (a note, and left out of the figures). */
const LAG_WAIT_MS = 5000;
/** Streams opened at a time in the idle-streams scenario, so connects do not overflow the listen backlog. */
const OPEN_AT_ONCE = 100;
/** After the last stream opened, before RSS is read: the server's last allocations settle. */
const SETTLE_MS = 1000;

/**
 * The change events on one backend, in one run: PATCH throughput with the event log against the
 * same build without it (a second server whose store appends no events, BENCH_WITHOUT_EVENT_LOG),
 * alternated over rounds; the time from a PATCH's 200 to its event on an open stream; and how many
 * idle streams one process holds, with its RSS before and after.
 */
export async function eventsSection(backend: Backend, title: string, options: BenchOptions, load: LoadGenerator): Promise<Section> {
  const rows: Row[] = [];
  const notes: string[] = [];
  rows.push(...(await throughputRows(backend, options, load, notes)));
  rows.push(await lagRow(backend, options.smoke ? 20 : options.quick ? 200 : 500, notes));
  rows.push(...(await idleStreamRows(backend, options.smoke ? 100 : options.quick ? 2000 : 10_000, notes)));
  return { title, rows, notes };
}

/**
 * Both servers up at once, each on a fresh database seeded alike, then PATCH loads alternated
 * between them (the order swapped each round, so neither always runs first); each side's best
 * round is compared: other work on a shared machine only ever slows a round down.
 */
async function throughputRows(backend: Backend, options: BenchOptions, load: LoadGenerator, notes: string[]): Promise<Row[]> {
  const size = options.sizes[1];
  const rounds = roundsOf(options);
  const scenario = `PATCH random pet, ${size.toLocaleString('en-US')} entries`;
  const sides: Side[] = [];
  try {
    for (const [label, env] of [
      ['service, event log on', {}],
      ['service, event log off (bench only)', { [BENCH_WITHOUT_EVENT_LOG]: '1' }],
    ] as const) {
      const databaseUrl = await createDatabase(backend, `events_${sides.length}`);
      const key = await seedDatabase(databaseUrl, size);
      sides.push({ label, key, server: await startServer('service', { databaseUrl, key, env }), runs: [] });
    }
    const heads = await Promise.all(sides.map((s) => eventsHead(s)));
    await alternateRounds(sides, scenario, backend, options, load, notes);
    // The comparison means something only if the one server appended events and the other none.
    const [on, off] = sides as [Side, Side];
    const grown = await Promise.all(sides.map((s, i) => eventsHead(s).then((h) => h - heads[i]!)));
    if (grown[0]! <= 0 || grown[1] !== 0) throw new Error(`the events head grew by ${grown[0]} with the log and by ${grown[1]} without it; expected > 0 and 0`);
    const best = bestRun;
    const each = eachRun;
    notes.push(
      `${scenario}: both servers are the same build, up at once on two databases seeded alike, ${PATCH_CONNECTIONS} connections; ` +
        `one uncounted warm-up round, then ${roundsText(rounds)} alternated (order swapped each round), the best of each shown; req/s per round: log on ${each(on)}; log off ${each(off)}. ` +
        `The log-off server runs with ${BENCH_WITHOUT_EVENT_LOG}=1 (its store appends no event for a PATCH); its events head stayed put, the other's grew by ${grown[0]!.toLocaleString('en-US')}`,
    );
    return [
      { scenario, server: off.label, result: best(off), checks: [] },
      { scenario, server: on.label, result: best(on), checks: [ratio(best(on).requestsPerSecond / best(off).requestsPerSecond, 'without the log', EVENTS_TARGETS.withLogVsWithout)] },
    ];
  } finally {
    await Promise.all(sides.map((s) => s.server.stop()));
  }
}

/**
 * `count` PATCHes one at a time (each sent once the previous one's event arrived, then a pause),
 * from the process that also reads an open stream: the time from each 200 (its body read) to its
 * event, matched by X-Request-Id, on this process's one clock. Negative when the event came first.
 */
async function lagRow(backend: Backend, count: number, notes: string[]): Promise<Row> {
  const scenario = 'PATCH 200 → its event on an open stream';
  const databaseUrl = await createDatabase(backend, 'events_lag');
  const key = await seedDatabase(databaseUrl, 100);
  const server = await startServer('service', { databaseUrl, key });
  const waiting = new Map<string, (at: number) => void>();
  const stream = new StreamReader(server.baseUrl, key, ({ requestId, at }: Arrival) => requestId !== null && waiting.get(requestId)?.(at));
  try {
    const status = await stream.opened;
    if (status !== 200) throw new Error(`GET /v1/events/stream answered ${status}`);
    const afterOk: number[] = [];
    const afterSend: number[] = [];
    let missing = 0;
    for (let i = 0; i < count; i++) {
      const requestId = `bench-lag-${i}`;
      const arrived = new Promise<number | undefined>((resolve) => {
        waiting.set(requestId, resolve);
        setTimeout(() => resolve(undefined), LAG_WAIT_MS).unref();
      });
      const sent = performance.now();
      const answered = await patch(server.baseUrl, key, 1 + (i % 100), i % 1000, requestId);
      const at = await arrived;
      waiting.delete(requestId);
      if (at === undefined) missing++;
      else {
        afterOk.push(at - answered);
        afterSend.push(at - sent);
      }
      await sleep(LAG_PACE_MS);
    }
    if (afterOk.length === 0) throw new Error(`none of ${count} PATCHes' events reached the stream within ${LAG_WAIT_MS / 1000} s`);
    if (missing > 0) notes.push(`${scenario}: ${missing} of ${count} events did not arrive within ${LAG_WAIT_MS / 1000} s, left out`);
    const first = afterOk.filter((d) => d < 0).length;
    afterOk.sort((a, b) => a - b);
    afterSend.sort((a, b) => a - b);
    notes.push(
      `${scenario}: ${count} PATCHes one at a time (${LAG_PACE_MS} ms apart once the event is in) and one stream, in this process, on its one clock; ` +
        `a negative time means the event was read before the 200 (${first} of ${afterOk.length}); from the PATCH sent to its event: ` +
        `median ${afterSend[afterSend.length >> 1]!.toFixed(2)} ms, p99 ${percentile(afterSend, 99).toFixed(2)} ms`,
    );
    return {
      scenario,
      server: `service (${afterOk.length} PATCHes)`,
      checks: [{ text: `median ${afterOk[afterOk.length >> 1]!.toFixed(2)} ms, p99 ${percentile(afterOk, 99).toFixed(2)} ms` }],
    };
  } finally {
    stream.close();
    await server.stop();
  }
}

/** PATCH one pet and resolve with performance.now() once its 200 has been read whole; throws on another status. */
export function patch(baseUrl: string, key: string, petId: number, quantity: number, requestId: string): Promise<number> {
  const body = JSON.stringify({ quantity });
  return new Promise((resolve, reject) => {
    const req = request(new URL(`/v1/inventory/${petId}`, baseUrl), {
      method: 'PATCH',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'x-request-id': requestId },
    });
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 200 ? resolve(performance.now()) : reject(new Error(`PATCH /v1/inventory/${petId} answered ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * Idle streams on one server whose MAX_EVENT_STREAMS is `max`: opened OPEN_AT_ONCE at a time until
 * `max` are held or one is refused or fails; then one more, which the limit must refuse. The
 * server's RSS before the first and after the last, and what each stream costs it.
 */
async function idleStreamRows(backend: Backend, max: number, notes: string[]): Promise<Row[]> {
  const scenario = `idle streams (MAX_EVENT_STREAMS=${max.toLocaleString('en-US')})`;
  const databaseUrl = await createDatabase(backend, 'events_idle');
  const key = await seedDatabase(databaseUrl, 100);
  const server = await startServer('service', { databaseUrl, key, env: { MAX_EVENT_STREAMS: String(max) } });
  const streams: StreamReader[] = [];
  try {
    // One stream opened and closed first, so the code of the route is loaded before RSS is read.
    const probe = new StreamReader(server.baseUrl, key);
    const probed = await probe.opened;
    probe.close();
    if (probed !== 200) throw new Error(`GET /v1/events/stream answered ${probed}`);
    await sleep(SETTLE_MS);
    const before = server.rssBytes();
    let failure: string | undefined;
    while (streams.length < max && failure === undefined) {
      const wave = Array.from({ length: Math.min(OPEN_AT_ONCE, max - streams.length) }, () => new StreamReader(server.baseUrl, key));
      const statuses = await Promise.all(wave.map((s) => s.opened.catch((err: Error) => err.message)));
      const bad = statuses.findIndex((s) => s !== 200);
      if (bad >= 0) failure = `stream ${(streams.length + bad + 1).toLocaleString('en-US')}: ${typeof statuses[bad] === 'number' ? `status ${statuses[bad]}` : statuses[bad]}`;
      wave.forEach((s, i) => (statuses[i] === 200 ? streams.push(s) : s.close()));
    }
    await sleep(SETTLE_MS);
    const after = server.rssBytes();
    const peak = server.peakRssBytes();
    const extra = new StreamReader(server.baseUrl, key);
    const beyond = await extra.opened.catch((err: Error) => err.message);
    extra.close();
    const held = streams.length;
    if (failure !== undefined) notes.push(`${scenario}: stopped at the first failure, ${failure}`);
    notes.push(
      `${scenario}: opened ${OPEN_AT_ONCE} at a time by one client process, each on a socket of its own, nothing sent on them; ` +
        `RSS (VmRSS) read ${SETTLE_MS / 1000} s after the probe stream and after the last stream; the stream past the limit was answered ${beyond}`,
    );
    const mib = (bytes: number | undefined) => (bytes === undefined ? 'unknown' : `${(bytes / 1048576).toFixed(0)} MB`);
    const perStream = before === undefined || after === undefined || held === 0 ? 'unknown' : `${((after - before) / held / 1024).toFixed(1)} KiB`;
    return [
      { scenario, server: 'service: streams held', checks: [{ text: `${held.toLocaleString('en-US')} of ${max.toLocaleString('en-US')}`, target: `${max.toLocaleString('en-US')}`, met: held === max }] },
      { scenario, server: 'service: RSS', checks: [{ text: `before ${mib(before)}, after ${mib(after)} (peak ${mib(peak)})` }, { text: `${perStream} per stream` }] },
    ];
  } finally {
    for (const s of streams) s.close();
    await server.stop();
  }
}

/** The newest seq, from the feed's X-Events-Head. */
async function eventsHead(side: Pick<Side, 'server' | 'key'>): Promise<number> {
  const res = await fetch(`${side.server.baseUrl}/v1/events?limit=1`, { headers: { authorization: `Bearer ${side.key}` } });
  await res.arrayBuffer();
  const head = res.headers.get('x-events-head');
  if (res.status !== 200 || head === null) throw new Error(`GET /v1/events answered ${res.status} without X-Events-Head`);
  return Number(head);
}
