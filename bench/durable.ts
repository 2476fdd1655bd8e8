import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { RESERVATION_TTL_MAX } from '../src/schemas/values.js';
import { ANSWER_HEADERS_VARIABLE, answerHeadersOf } from './answer-headers.js';
import { createDatabase, type Backend } from './databases.js';
import { pacedRows } from './durable-paced.js';
import { patch } from './events.js';
import type { LoadGenerator } from './load.js';
import type { BenchOptions } from './options.js';
import { describeLoadAverage } from './machine.js';
import { CLOCK_TICKS, REPO_ROOT, spawnChild } from './processes.js';
import { ratio, type Check, type Row, type Section } from './report.js';
import { GET_CONNECTIONS, TARGETS } from './scenarios.js';
import { benchItems, seedDatabaseWith } from './seed.js';
import {
  alternateRounds,
  bestCounted,
  bestCpuUs,
  bestRun,
  cpu,
  eachCounted,
  eachCpu,
  eachRun,
  roundsOf,
  roundsText,
  type RoundShape,
  type Side,
} from './side-by-side.js';
import { bareDurableFile, SERVICE_BIN, serviceEnvironment, startServer } from './servers.js';
import { StreamReader } from './stream-reader.js';
import { DRAIN_MAX_MS, QUIET_MS, Receiver } from './webhooks.js';

/** The issue's targets for the service as deployed against the bare servers and the in-memory baseline. */
export const DURABLE_TARGETS = { patchVsBareEvents: 0.9, adjustmentVsBareEvents: 0.9, reservationVsBare: 0.9 } as const;

/** Entries of the write comparisons, whatever the mode (a quick run only shortens the windows). */
const ENTRIES = 10_000;
/** wrk -t1 -c64: more connections than the main table's PATCH, so the group commits have something to gather. */
const WRITE_CONNECTIONS = 64;
/** Every pet's stock: no adjustment of ±1 in any run comes near 0, nor do the holds of 1 of a run exhaust one (no 409). */
const STOCK = 1_000_000;
/** Idle event streams held open on one of the read servers. */
const STREAMS = 100;
/** How long the service's first delivery to the registered endpoint may take (the dispatcher leases new endpoints on a timer). */
const FIRST_DELIVERY_MS = 60_000;
const DELIVERING = { WEBHOOKS_ALLOW_PRIVATE: 'true' };

/**
 * Durable writes on one backend: the service as deployed (event log on, one webhook endpoint), and
 * with no endpoint, against the bare durable group-commit server writing the entry (with its version) alone, plus its
 * history row, plus its history row and event, all up at once on databases seeded alike, PATCH and
 * adjustment loads alternated, with each server's CPU per request; reservations of 1 against the
 * same bare server writing a creation's rows instead; PATCHes at a paced rate, the
 * service's CPU per change with its deliveries against the bare server's plus the bare sender's
 * (durable-paced.ts); then reads, the service against
 * the in-memory baseline, one service holding idle event streams.
 */
export async function durableSection(backend: Backend, title: string, options: BenchOptions, load: LoadGenerator): Promise<Section> {
  if (load.tool !== 'wrk') {
    return { title, rows: [], notes: ['skipped: needs wrk (each server\'s CPU is read around the measured window, which only wrk runs apart from its warm-up); install wrk and drop --load autocannon'] };
  }
  const notes = [`${describeLoadAverage()} at the start`];
  const rows = [...(await writeRows(backend, options, load, notes)), ...(await readRows(backend, options, load, notes))];
  notes.push(
    `CPU/request: utime + stime of the server process, all its threads (/proc/PID/stat), read right before and after the measured wrk run (not its warm-up run), ` +
      `over the 2xx answers in that window, in µs; clock ticks of 1/${CLOCK_TICKS.perSecond} s (${CLOCK_TICKS.assumed ? 'getconf CLK_TCK failed: assumed' : 'getconf CLK_TCK'}), so a ` +
      `window's reading is ±1 tick; requests still in flight when wrk stops are in the CPU but not in the count. The best round's figure is on the row, with the share of the ` +
      `main thread (/proc/PID/task/PID/stat: the event loop, where HTTP is parsed and answered) and of the others (the service's SQLite writer thread, V8's GC helpers)`,
    `${describeLoadAverage()} at the end; the machine is shared with other work, which only ever slows a round down (hence the best of each)`,
  );
  return { title, rows, notes };
}

async function writeRows(backend: Backend, options: BenchOptions, load: LoadGenerator, notes: string[]): Promise<Row[]> {
  const bareFile = bareDurableFile(backend === 'sqlite' ? 'sqlite:' : 'postgres:');
  const withBare = existsSync(resolve(REPO_ROOT, bareFile));
  if (!withBare) notes.push(`${bareFile} is missing from this build: the bare durable servers and the ratios to them are skipped, the service is measured alone`);
  const items = benchItems(ENTRIES).map((item) => ({ ...item, quantity: STOCK }));
  const receiver = new Receiver();
  const hooksUrl = await receiver.listen();
  const sides: Side[] = [];
  const start = async (label: string, name: string, run: (databaseUrl: string, key: string) => ReturnType<typeof startServer>) => {
    const databaseUrl = await createDatabase(backend, `durable_${name}`);
    const key = await seedDatabaseWith(databaseUrl, items, ['inventory:write', 'webhooks:manage']);
    const side: Side = { label, key, server: await run(databaseUrl, key), runs: [] };
    sides.push(side);
    return { side, databaseUrl };
  };
  try {
    const bare = withBare
      ? {
          entry: (await start('bare durable: entry only', 'entry', (databaseUrl, key) => startServer('durable', { databaseUrl, key, env: { BARE_WRITES: 'entry' } }))).side,
          history: (await start('bare durable: + history row', 'history', (databaseUrl, key) => startServer('durable', { databaseUrl, key, env: { BARE_WRITES: 'history' } }))).side,
          events: (await start('bare durable: + history row + event', 'events', (databaseUrl, key) => startServer('durable', { databaseUrl, key, env: { BARE_WRITES: 'events' } }))).side,
        }
      : undefined;
    const { side: service, databaseUrl: serviceUrl } = await start('service (event log, 1 webhook endpoint)', 'service', (databaseUrl, key) =>
      startServer('service', { databaseUrl, key, env: DELIVERING }),
    );
    notes.push(await registerEndpoint(service, serviceUrl, hooksUrl));
    await firstDelivery(service, receiver);
    // A faster dispatcher takes more of the server core from the answers: the row says how many deliveries it made meanwhile.
    service.counter = () => receiver.count;
    // The service again with no endpoint: its ratio to the one above is what the deliveries made during a round cost.
    const plain = (await start('service (event log, no webhook endpoint)', 'plain', (databaseUrl, key) => startServer('service', { databaseUrl, key }))).side;
    // The bare server again, its answers carrying what the service's PATCH answer carries: PATCH rounds only.
    const patchHeaders = bare ? await serviceAnswerHeaders(service, '/v1/inventory/1', { method: 'PATCH', body: JSON.stringify({ quantity: STOCK }) }) : undefined;
    const withHeadersEnv = { BARE_WRITES: 'events', [ANSWER_HEADERS_VARIABLE]: JSON.stringify(patchHeaders) };
    const withHeaders =
      bare &&
      (
        await start("bare durable: + history row + event + the service's answer headers", 'headers', (databaseUrl, key) =>
          startServer('durable', { databaseUrl, key, env: withHeadersEnv }),
        )
      ).side;
    // The same again, framed by the bench's own HTTP/1.1 on node:net: what answering on raw sockets would save.
    const ownFraming =
      bare &&
      (
        await start("bare durable: + history row + event + the service's answer headers, own HTTP/1.1 framing on node:net", 'net', (databaseUrl, key) =>
          startServer('durable', { databaseUrl, key, env: { ...withHeadersEnv, BARE_HTTP: 'net' } }),
        )
      ).side;
    // SQLite's bare servers commit on the event loop, which answers nothing while the fsync waits; the service commits in a
    // writer thread so that reads go on meanwhile. The bare server so built, with and without the headers: what that costs.
    const inThread =
      bare && withHeaders && backend === 'sqlite'
        ? {
            events: (
              await start(`${bare.events.label}, committed in a writer thread`, 'thread', (databaseUrl, key) =>
                startServer('durable', { databaseUrl, key, env: { BARE_WRITES: 'events', BARE_COMMIT: 'thread' } }),
              )
            ).side,
            headers: (
              await start(`${withHeaders.label}, committed in a writer thread`, 'thread_headers', (databaseUrl, key) =>
                startServer('durable', { databaseUrl, key, env: { ...withHeadersEnv, BARE_COMMIT: 'thread' } }),
              )
            ).side,
          }
        : undefined;

    // Adjustments first, while every stock is still far from 0, then reservations; the PATCHes then set counts of 0 to 999.
    const adjustment = `POST adjustment ±1 random pet, ${ENTRIES.toLocaleString('en-US')} entries`;
    const adjusted = [...(bare ? [bare.events] : []), ...(inThread ? [inThread.events] : []), service, plain];
    // The service delivers its events after answering: a backlog left from one round would take the server core from the next round's server.
    const drain = { ms: 0, overdue: 0 };
    const settle = () => deliveriesDelivered(receiver, drain);
    const adjustmentShape: RoundShape = { method: 'POST', petCount: ENTRIES, connections: WRITE_CONNECTIONS, cpu: true, settle };
    // Sides of their own on the same servers, so each comparison keeps its own rounds.
    const adjustmentSides: Side[] = adjusted.map((s) => ({ ...s, runs: [] }));
    await alternateRounds(adjustmentSides, adjustment, backend, options, load, notes, adjustmentShape);
    // Before the PATCHes: a count set below what is held would leave nothing available to hold.
    const reservation = `POST reservation of 1 random pet, ${ENTRIES.toLocaleString('en-US')} entries`;
    // The same bare servers: a reservation writes its own rows whatever BARE_WRITES says, and their rows are named so.
    const reservationLabel = (side: Side) => (side === bare?.events ? RESERVATION_ROWS : side === inThread?.events ? `${RESERVATION_ROWS}, committed in a writer thread` : side.label);
    const reservationSides: Side[] = adjusted.map((s) => ({ ...s, label: reservationLabel(s), runs: [] }));
    await alternateRounds(reservationSides, reservation, backend, options, load, notes, { ...adjustmentShape, method: 'RESERVE' });
    const patchScenario = `PATCH random pet, ${ENTRIES.toLocaleString('en-US')} entries`;
    await alternateRounds(sides, patchScenario, backend, options, load, notes, { ...adjustmentShape, method: 'PATCH' });
    if (receiver.count === 0) throw new Error('the service delivered no event to its webhook endpoint during the loads');

    /** A server's side in one load's rounds. */
    const inRounds = (rounds: Side[]) => (side: Side) => rounds.find((s) => s.server === side.server)!;
    const [byAdjustment, byReservation] = [inRounds(adjustmentSides), inRounds(reservationSides)];
    const rps = (side: Side) => bestRun(side).requestsPerSecond;
    /** A bare server's row in `scenario`: its best round, its ratio to `base` (named `of`), its CPU. */
    const against = (scenario: string, side: Side, base: Side, of: string): Row => ({
      scenario,
      server: side.label,
      result: bestRun(side),
      checks: [ratio(rps(side) / rps(base), of), cpu(side)],
    });
    /**
     * The rows of the two services in one load's rounds (`of` finds their sides there): each against
     * the bare server writing what they write, when there is one (the one with no endpoint to the
     * target: the issue's gate), with its CPU against that server's, `more` after that, and the first
     * against the second, which is what its deliveries cost.
     */
    const serviceRows = (scenario: string, of: (side: Side) => Side, fair?: FairBare & { target: number; more: Check[] }): Row[] => {
      const [withEndpoint, without] = [of(service), of(plain)];
      const toBare = (side: Side, target?: number) => (fair ? [ratio(rps(side) / rps(fair.bare), fair.of, target), cpuAgainstBare(side, fair.bare)] : []);
      return [
        {
          scenario,
          server: service.label,
          result: bestRun(withEndpoint),
          checks: [
            ...toBare(withEndpoint),
            ...(fair?.more ?? []),
            ratio(rps(withEndpoint) / rps(without), 'service without an endpoint'),
            cpu(withEndpoint),
            deliveries(withEndpoint),
          ],
        },
        { scenario, server: plain.label, result: bestRun(without), checks: [...toBare(without, fair?.target), cpu(without)] },
      ];
    };
    /**
     * The rows of one load's rounds (`of` finds a server's side there) but PATCH's: the bare server
     * writing what the services write, the same in a writer thread against it, and the services
     * against the faster of the two (named `what`), to `target`.
     */
    const againstBare = (scenario: string, of: (side: Side) => Side, target: number, what?: string): Row[] => {
      if (!bare) return [];
      const [loop, thread] = [of(bare.events), inThread && of(inThread.events)];
      return [
        { scenario, server: loop.label, result: bestRun(loop), checks: [cpu(loop)] },
        ...(thread ? [against(scenario, thread, loop, 'the same on the event loop')] : []),
        ...serviceRows(scenario, of, { ...fasterBare(loop, thread, rps, what), target, more: [] }),
      ];
    };
    // With the endpoint, the gate is CPU at a rate its deliveries keep up with, against the bare servers and the bare sender in the same run.
    const paced = bare
      ? await pacedRows({
          backend,
          options,
          load,
          notes,
          bares: [bare.events, ...(inThread ? [inThread.events] : [])],
          service,
          receiver,
          bareRate: rps(fasterBare(bare.events, inThread?.events, rps).bare),
          petCount: ENTRIES,
          connections: WRITE_CONNECTIONS,
          settle,
        })
      : [];
    const rows: Row[] = [];
    if (bare && withHeaders && ownFraming) {
      rows.push(
        { scenario: patchScenario, server: bare.entry.label, result: bestRun(bare.entry), checks: [cpu(bare.entry)] },
        against(patchScenario, bare.history, bare.entry, 'bare entry only'),
        against(patchScenario, bare.events, bare.entry, 'bare entry only'),
        against(patchScenario, withHeaders, bare.events, 'bare + history + event'),
        against(patchScenario, ownFraming, withHeaders, 'the same on node:http'),
        ...(inThread
          ? [
              against(patchScenario, inThread.events, bare.events, 'the same on the event loop'),
              against(patchScenario, inThread.headers, withHeaders, 'the same on the event loop'),
            ]
          : []),
        ...serviceRows(patchScenario, (side) => side, {
          ...fasterBare(bare.events, inThread?.events, rps),
          target: DURABLE_TARGETS.patchVsBareEvents,
          more: [
            ratio(rps(service) / rps(withHeaders), 'bare with its headers'),
            ...(inThread ? [ratio(rps(service) / rps(inThread.headers), 'bare in a writer thread with its headers')] : []),
            ratio(rps(service) / rps(bare.entry), 'bare entry only'),
          ],
        }),
        ...paced,
        ...againstBare(adjustment, byAdjustment, DURABLE_TARGETS.adjustmentVsBareEvents),
        ...againstBare(reservation, byReservation, DURABLE_TARGETS.reservationVsBare, "bare reservation's rows"),
      );
    } else {
      rows.push(...serviceRows(patchScenario, (side) => side), ...serviceRows(adjustment, byAdjustment), ...serviceRows(reservation, byReservation));
    }
    notes.push(
      `${patchScenario}, ${adjustment} and ${reservation}: ${sides.length === 1 ? 'the service alone' : `${sides.length} servers up at once, each`} on a database of its own seeded alike (${ENTRIES.toLocaleString('en-US')} pets, ` +
        `stock ${STOCK.toLocaleString('en-US')} each), wrk -t1 -c${WRITE_CONNECTIONS}, servers on the server core and wrk on the load core; ` +
        `one uncounted warm-up round, then ${roundsText(roundsOf(options))}${sides.length === 1 ? '' : ' alternated (order swapped each round)'}, the best of each shown; the adjustments (+1 or -1 at random) ran first, then the reservations, then the PATCHes. ` +
        (bare
          ? 'Bare durable: node:http with a group commit (every change parsed while the last batch committed goes into the next transaction, each answered after its commit), ' +
            `${backend === 'sqlite' ? 'better-sqlite3 in WAL with synchronous=FULL' : 'pg, synchronous_commit=on'}, each change bumping its entry's version as the service's does, no keys table, idempotency nor change log; ` +
            '"+ history row + event" writes the rows a service change writes; "+ the service\'s answer headers" (PATCH rounds only) is that server again, each answer ' +
            `carrying the headers of the service's answer to a PATCH (${Object.keys(patchHeaders ?? {}).join(', ')}; the request id new for each), so that the service's ` +
            'ratio to it is what its own work costs, and its ratio to the other is what those headers cost node:http; ' +
            '"own HTTP/1.1 framing on node:net" is that server once more, reading requests and writing answers itself (bench/bare-http1.ts: Content-Length bodies, ' +
            'keep-alive, the fixed headers rendered once) instead of through node:http, so its ratio to the one before is the most a fast lane on raw sockets could save. ' +
            (inThread
              ? 'These commit on the event loop, which answers nothing while the fsync waits; "committed in a writer thread" is the bare server (with and without the ' +
                'service\'s headers) committing each batch in a worker thread with its own connection instead (BARE_COMMIT=thread: the batch posted as columns, its ' +
                'results posted back), as the service does so that reads are answered during the fsync: its ratio to the same on the event loop is what that costs ' +
                'a server that does nothing else, and the faster of the two (without the headers) in each load\'s rounds is the baseline the services are gated against. '
              : '')
          : '') +
        'The service is as deployed, event log on, one webhook endpoint (a node:http receiver in the bench process answering 204 at once); ' +
        '"no webhook endpoint" is the same service with none registered, so the ratio between the two is what delivering the events costs the server core; the first ' +
        `received ${receiver.count.toLocaleString('en-US')} deliveries over the loads; before each load the bench waited until no delivery had come for ${QUIET_MS} ms ` +
        `(the backlog of the last round delivered, ${(drain.ms / 1000).toFixed(0)} s in all${drain.overdue > 0 ? `; ${drain.overdue} times not within ${DRAIN_MAX_MS / 1000} s, the round ran anyway` : ''}), ` +
        'so that no round shares the server core with the deliveries of another; the deliveries made during its own rounds are in the service\'s figures and its CPU',
      reservationNote(reservation, backend, bare !== undefined),
      ...sides.map((s) => `${patchScenario}, ${s.label}: req/s per round ${eachRun(s)}; CPU µs/request per round ${eachCpu(s)}${deliveriesPerRound(s)}`),
      ...adjustmentSides.map((s) => `${adjustment}, ${s.label}: req/s per round ${eachRun(s)}; CPU µs/request per round ${eachCpu(s)}${deliveriesPerRound(s)}`),
      ...reservationSides.map((s) => `${reservation}, ${s.label}: req/s per round ${eachRun(s)}; CPU µs/request per round ${eachCpu(s)}${deliveriesPerRound(s)}`),
    );
    return rows;
  } finally {
    await Promise.all(sides.map((s) => s.server.stop()));
    receiver.close();
  }
}

/** The bare server's label in the reservation rounds, where it writes a creation's rows, not a change's. */
const RESERVATION_ROWS = "bare durable: a reservation's rows";

/** What the reservation rounds send, and what the bare server writes for each (`withBare`: when it ran). */
function reservationNote(scenario: string, backend: Backend, withBare: boolean): string {
  const load = `${scenario}: POST /v1/reservations {"items":[{"petId":random,"quantity":1}],"ttlSeconds":${RESERVATION_TTL_MAX}} (the longest hold the API allows, so none lapses and the expiry sweep has nothing to mark)`;
  if (!withBare) return load;
  return (
    `${load}; "${RESERVATION_ROWS}" is the bare server above (BARE_WRITES aside) answering it with what a creation writes in the service's store, in the ` +
    `batch's one group-commit ${backend === 'sqlite' ? 'transaction' : 'statement'}: the pet's count and what is held of it read, 1 available (count less held) checked (else 409), ` +
    "then the reservation's row (an id of the service's form, status active, created and expiry times, the key's id, the request id) and its item's row, " +
    "in tables keyed and indexed as the service's (the id unique, the expiry index, the item's (place, position) key and pet index), the entry's reserved + 1 " +
    "(its version unchanged, as the service's), and the event reservation.created carrying the reservation as the service's payload; answered 201 with the " +
    "reservation's JSON and its Location. No keys table, idempotency, store version nor change log, as for the other bare writes; the service's look for lapsed holds " +
    'at the start of each of its groups is not in it either'
  );
}

/**
 * Registers one endpoint for `url` on the service: through the API (POST /v1/webhooks, a key with
 * webhooks:manage) where this build has the route, else with `webhooks add`, the CLI that manages
 * them; returns the note saying which.
 */
async function registerEndpoint(service: Side, databaseUrl: string, url: string): Promise<string> {
  const res = await fetch(`${service.server.baseUrl}/v1/webhooks`, {
    method: 'POST',
    headers: { authorization: `Bearer ${service.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url, description: 'bench' }),
  });
  const body = await res.text();
  if (res.ok) return 'webhook endpoint registered through the API (POST /v1/webhooks)';
  if (res.status !== 404 && res.status !== 405) throw new Error(`POST /v1/webhooks answered ${res.status}: ${body.slice(0, 300)}`);
  const cli = spawnChild([SERVICE_BIN, 'webhooks', 'add', '--url', url, '--description', 'bench'], { env: { ...serviceEnvironment(databaseUrl), ...DELIVERING } });
  const how = await cli.exited;
  if (how !== '0') throw new Error(`webhooks add exited with ${how}:\n${cli.output()}`);
  return `webhook endpoint registered with \`petstore-inventory webhooks add\`: this build's API has no POST /v1/webhooks (it answered ${res.status})`;
}

/** One PATCH that keeps pet 1's stock, then waits until the endpoint has received its first delivery: the loads run with deliveries under way. */
async function firstDelivery(service: Side, receiver: Receiver): Promise<void> {
  await patch(service.server.baseUrl, service.key, 1, STOCK, 'bench-durable-first');
  const deadline = Date.now() + FIRST_DELIVERY_MS;
  while (receiver.count === 0) {
    if (Date.now() > deadline) throw new Error(`the webhook endpoint received nothing within ${FIRST_DELIVERY_MS / 1000} s of a PATCH`);
    await sleep(50);
  }
}

/** Until the receiver has had no delivery for QUIET_MS (at most DRAIN_MAX_MS: past it the round runs anyway, and a note says so), adding the time waited to `drain`. */
async function deliveriesDelivered(receiver: Receiver, drain: { ms: number; overdue: number }): Promise<void> {
  const started = Date.now();
  if (!(await receiver.quiet(QUIET_MS, DRAIN_MAX_MS))) drain.overdue++;
  drain.ms += Date.now() - started;
}

/** The headers of the service's answer to `init` on `path` (answerHeadersOf), in the identity coding the loads get. */
async function serviceAnswerHeaders(service: Side, path: string, init: RequestInit = {}): Promise<Record<string, string>> {
  const res = await fetch(`${service.server.baseUrl}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${service.key}`, 'accept-encoding': 'identity', 'content-type': 'application/json' },
  });
  const body = await res.text();
  if (res.status !== 200) throw new Error(`${init.method ?? 'GET'} ${path} answered ${res.status}: ${body.slice(0, 300)}`);
  return answerHeadersOf(res);
}

/** The GETs of the list, whatever the mode: the issue's sizes, each held to its own target against the baseline. */
const READS = [
  { entries: 100, target: TARGETS.getSmall },
  { entries: 10_000, target: TARGETS.getMedium },
] as const;

/**
 * The service as deployed against the in-memory baseline on GET of the list, a second service holding
 * idle event streams, and the baseline again with the service's answer headers: at each size of READS.
 */
async function readRows(backend: Backend, options: BenchOptions, load: LoadGenerator, notes: string[]): Promise<Row[]> {
  notes.push(
    `${READS.map((r) => `GET ${r.entries.toLocaleString('en-US')} entries`).join(' and ')}, one after the other: at each size two baselines and two services up at once, ` +
      `each on a database of its own seeded alike, ${GET_CONNECTIONS} connections, rounds alternated as above; ` +
      `${STREAMS} idle GET /v1/events/stream held open on the second service (each on a socket of its own) from before its first round to after its last; ` +
      "the second baseline adds to each answer the headers the service's answer carries (read from one GET of the service before the rounds, the request id new " +
      "for each answer), so that the ratio to it is what the service's own work costs, and its ratio to the first is what those headers cost node:http",
  );
  const rows: Row[] = [];
  for (const read of READS) rows.push(...(await readRowsOf(read.entries, read.target, backend, options, load, notes)));
  return rows;
}

/** The read rows at one size, all four servers measured side by side. */
async function readRowsOf(entries: number, target: number, backend: Backend, options: BenchOptions, load: LoadGenerator, notes: string[]): Promise<Row[]> {
  const scenario = `GET ${entries.toLocaleString('en-US')} entries`;
  const items = benchItems(entries);
  const sides: Side[] = [];
  const streams: StreamReader[] = [];
  try {
    const start = async (label: string, kind: 'baseline' | 'service', env?: NodeJS.ProcessEnv) => {
      const databaseUrl = await createDatabase(backend, `durable_read_${entries}_${sides.length}`);
      const key = await seedDatabaseWith(databaseUrl, items);
      const side: Side = { label, key, server: await startServer(kind, { databaseUrl, key, env }), runs: [] };
      sides.push(side);
      return side;
    };
    const baseline = await start('baseline (node:http, in memory)', 'baseline');
    const service = await start('service', 'service');
    const streamed = await start(`service, ${STREAMS} event streams open`, 'service');
    const headers = await serviceAnswerHeaders(service, '/v1/inventory');
    const withHeaders = await start("baseline + the service's answer headers", 'baseline', { [ANSWER_HEADERS_VARIABLE]: JSON.stringify(headers) });
    for (let i = 0; i < STREAMS; i++) streams.push(new StreamReader(streamed.server.baseUrl, streamed.key));
    const statuses = await Promise.all(streams.map((s) => s.opened));
    const refused = statuses.filter((s) => s !== 200).length;
    if (refused > 0) throw new Error(`${refused} of ${STREAMS} event streams were not opened (status ${statuses.find((s) => s !== 200)})`);
    await alternateRounds(sides, scenario, backend, options, load, notes, { method: 'GET', petCount: entries, connections: GET_CONNECTIONS, cpu: true });
    const rps = (side: Side) => bestRun(side).requestsPerSecond;
    notes.push(
      `${scenario}: the headers the second baseline adds (${Object.keys(headers).length}: ${Object.keys(headers).join(', ')}); ` +
        `req/s per round: ${sides.map((s) => `${s.label} ${eachRun(s)}`).join('; ')}; CPU µs/request per round: ${sides.map((s) => `${s.label} ${eachCpu(s)}`).join('; ')}`,
    );
    const toHeaders = (side: Side) => ratio(rps(side) / rps(withHeaders), 'baseline with its headers');
    return [
      { scenario, server: baseline.label, result: bestRun(baseline), checks: [cpu(baseline)] },
      { scenario, server: withHeaders.label, result: bestRun(withHeaders), checks: [ratio(rps(withHeaders) / rps(baseline), 'baseline'), cpu(withHeaders)] },
      {
        scenario,
        server: service.label,
        result: bestRun(service),
        checks: [ratio(rps(service) / rps(baseline), 'baseline', target), toHeaders(service), cpu(service)],
      },
      {
        scenario,
        server: streamed.label,
        result: bestRun(streamed),
        checks: [
          ratio(rps(streamed) / rps(baseline), 'baseline', target),
          toHeaders(streamed),
          ratio(rps(streamed) / rps(service), 'service without streams'),
          cpu(streamed),
        ],
      },
    ];
  } finally {
    for (const s of streams) s.close();
    await Promise.all(sides.map((s) => s.server.stop()));
  }
}

/**
 * The deliveries the endpoint received during the best round's measured window: in all, per 2xx
 * answer and per second of the window as wrk timed it (its 2xx answers over their rate; a counted
 * round always has some, or alternateRounds stops).
 */
function deliveries(side: Side): Check {
  const count = bestCounted(side);
  if (count === undefined) return { text: 'deliveries during the window unknown' };
  const { ok, requestsPerSecond } = bestRun(side);
  return { text: `${count.toLocaleString('en-US')} deliveries during the window (${(count / ok).toFixed(2)} a 2xx answer, ${Math.round((count * requestsPerSecond) / ok).toLocaleString('en-US')}/s)` };
}

/** "; deliveries during each round's window 1,234, ..." for a side with a counter, else nothing. */
function deliveriesPerRound(side: Side): string {
  return side.counted ? `; deliveries during each round's window ${eachCounted(side)}` : '';
}

/** The bare server a service is gated against in one load's rounds, and how its ratio names it. */
interface FairBare {
  bare: Side;
  of: string;
}

/**
 * Of the bare server writing a service write's rows on the event loop and the same committing in
 * a writer thread (SQLite only), the faster in these rounds: the issue's baseline is the better
 * of the two ways to build it, and the ratio says which it was (`what` names the rows).
 */
function fasterBare(loop: Side, thread: Side | undefined, rps: (side: Side) => number, what = 'bare + history + event'): FairBare {
  if (thread === undefined) return { bare: loop, of: what };
  return rps(thread) > rps(loop) ? { bare: thread, of: `${what} (the faster: in a writer thread)` } : { bare: loop, of: `${what} (the faster: on the event loop)` };
}

/** A side's CPU per request in its best round against a bare server's in its own, as a value. */
function cpuAgainstBare(side: Side, bare: Side): Check {
  const [us, bareUs] = [bestCpuUs(side), bestCpuUs(bare)];
  if (us === undefined || bareUs === undefined) return { text: "CPU/request against the bare server's unknown (no /proc)" };
  return { text: `CPU/request ${(us / bareUs).toFixed(2)}× the bare server's (${bareUs.toFixed(0)} µs)` };
}
