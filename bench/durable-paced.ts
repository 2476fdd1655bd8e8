import { FLUSH_EVERY_MS } from '../src/webhooks/endpoint-worker.js';
import type { Backend } from './databases.js';
import type { LoadGenerator } from './load.js';
import type { LoadResult } from './load-spec.js';
import type { BenchOptions } from './options.js';
import { CLOCK_TICKS, cpuTicks, mainThreadCpuTicks } from './processes.js';
import type { Check, Row } from './report.js';
import { firstRound, roundOrder, roundsOf, roundsText, type Side } from './side-by-side.js';
import { bareCpu, bareDeliveries, Receiver } from './webhooks.js';

/** The issue's ceiling: a change with its deliveries costs at most this many times the bare PATCH plus the bare sender's deliveries. */
export const PACED_TARGETS = { cpuOfBare: 1.25 } as const;

/** The paced rate as a share of the bare server's best PATCH rate in this run: below what one endpoint's deliveries keep up with (at 0.25 they fell behind). */
const PACED_SHARE = 0.1;
/**
 * A backlog larger at the end of a window than at its start by more than this many seconds of the
 * paced rate: the deliveries fell behind the changes. Below it is the few in flight at either end
 * (0.1 s), and the deliveries made but not yet recorded: the backlog is read from the endpoint's
 * recorded position, which its worker moves once every FLUSH_EVERY_MS while deliveries trickle in.
 */
const BACKLOG_SLACK_S = 0.1 + FLUSH_EVERY_MS / 1000;
/** The bare sender's deliveries, and how many go before its timing (the first compile its HTTP client), by mode. */
const SENDER = { smoke: { count: 300, warmup: 100 }, quick: { count: 3000, warmup: 1000 }, full: { count: 6000, warmup: 1000 } } as const;

/** What the paced comparison is given: the servers already up, and what their saturated rounds found. */
export interface PacedInput {
  backend: Backend;
  options: BenchOptions;
  load: LoadGenerator;
  notes: string[];
  /** The bare servers writing a service change's rows (on SQLite, on the event loop and in a writer thread). */
  bares: Side[];
  /** The service with one webhook endpoint, whose receiver is `receiver`. */
  service: Side;
  receiver: Receiver;
  /** The best PATCH rate of the bare server the service is gated against, this run: the rate is a share of it. */
  bareRate: number;
  petCount: number;
  connections: number;
  /** Awaited before each load: the last round's deliveries delivered. */
  settle: () => Promise<void>;
}

/** The bare sender's CPU per delivery, over how many timed deliveries, sent how many at a time; paced: as they came due at the paced rate. */
interface Sender {
  us: number;
  deliveries: number;
  inFlight: number;
  /** Its CPU per delivery back to back, as many open at once (no pace): a cheaper delivery, shown beside. */
  backToBackUs: number;
}

/** One paced round of one server: its load, its CPU per 2xx answer (all threads, and its main thread), and for the service its deliveries and backlog. */
interface PacedRun {
  result: LoadResult;
  cpuUs: number | undefined;
  mainUs: number | undefined;
  deliveries?: number;
  backlog?: { before: number; after: number };
}

/**
 * PATCHes at one fixed rate, a share of the bare server's, that the service's deliveries keep up
 * with, alternated between the bare servers and the service with its endpoint, each server's CPU
 * read around its load; then the bare sender's CPU per delivery of the service's own event: the
 * service's CPU per change, its deliveries included, against the bare PATCH's plus the bare
 * sender's for as many deliveries, and its endpoint's backlog at both ends of each window.
 */
export async function pacedRows(input: PacedInput): Promise<Row[]> {
  const rate = Math.max(1, Math.round(input.bareRate * PACED_SHARE));
  const scenario = `PATCH at ${rate.toLocaleString('en-US')}/s (paced), ${input.petCount.toLocaleString('en-US')} entries`;
  let event = '';
  input.receiver.onDelivery = (body) => (event = body);
  const runs = new Map<Side, PacedRun[]>([...input.bares, input.service].map((side) => [side, []]));
  for (let round = firstRound(input.options), rounds = roundsOf(input.options); round <= rounds; round++) {
    for (const side of roundOrder([...runs.keys()], round)) {
      await input.settle();
      const run = await pacedRun(input, side, rate);
      const which = round === 0 ? 'warm-up, not counted' : `round ${round}`;
      process.stderr.write(
        `  ${input.backend} | ${scenario} | ${side.label}: ${Math.round(run.result.requestsPerSecond)} req/s, ${run.result.failed} failed, ${run.cpuUs?.toFixed(0) ?? '?'} µs CPU/request (${which})\n`,
      );
      if (run.result.ok === 0) throw new Error(`${side.label} answered no 2xx during "${scenario}" (${run.result.failed} failures)`);
      if (round === 0) continue;
      if (run.result.failed > 0) input.notes.push(`${scenario}, ${side.label}, ${which}: ${run.result.failed} non-2xx answers or socket errors, left out of req/s and of the CPU's count`);
      runs.get(side)!.push(run);
    }
  }
  if (event === '') throw new Error(`the service delivered no event during "${scenario}"`);
  const sender = await senderCpu(input.options, event, (await endpointOf(input.service)).maxInFlight, rate);
  input.notes.push(pacedNote(input, scenario, rate, runs, sender));
  return rowsOf(scenario, input, rate, runs, sender);
}

/** One paced load against `side`: the backlog read outside the CPU window, so that reading it costs the window nothing. */
async function pacedRun(input: PacedInput, side: Side, rate: number): Promise<PacedRun> {
  const isService = side === input.service;
  const backlogBefore = isService ? (await endpointOf(side)).backlog : undefined;
  const pid = side.server.pid;
  const [all, main, count] = [cpuTicks(pid), mainThreadCpuTicks(pid), input.receiver.count];
  const result = await input.load.run({
    baseUrl: side.server.baseUrl,
    method: 'PATCH',
    authorization: `Bearer ${side.key}`,
    petCount: input.petCount,
    connections: input.connections,
    // No warm-up of its own: the window is the whole load, so the CPU read around it is the window's (round 0 warms up).
    warmupSeconds: 0,
    durationSeconds: input.options.durationSeconds,
    rate,
  });
  const run: PacedRun = { result, cpuUs: perAnswerUs(all, cpuTicks(pid), result.ok), mainUs: perAnswerUs(main, mainThreadCpuTicks(pid), result.ok) };
  if (!isService) return run;
  run.deliveries = input.receiver.count - count;
  run.backlog = { before: backlogBefore!, after: (await endpointOf(side)).backlog };
  return run;
}

/** The service's one endpoint, through GET /v1/webhooks: its backlog (events committed, not yet delivered to it) and its maxInFlight. */
async function endpointOf(side: Side): Promise<{ backlog: number; maxInFlight: number }> {
  const res = await fetch(`${side.server.baseUrl}/v1/webhooks`, { headers: { authorization: `Bearer ${side.key}` } });
  const body = await res.text();
  if (res.status !== 200) throw new Error(`GET /v1/webhooks answered ${res.status}: ${body.slice(0, 300)}`);
  const { items } = JSON.parse(body) as { items: { backlog: number; maxInFlight: number }[] };
  if (items.length !== 1) throw new Error(`the service has ${items.length} webhook endpoints, not 1`);
  return items[0]!;
}

function perAnswerUs(before: number | undefined, after: number | undefined, answers: number): number | undefined {
  return before === undefined || after === undefined || answers === 0 ? undefined : (((after - before) / CLOCK_TICKS.perSecond) * 1e6) / answers;
}

/**
 * The bare sender over the service's own HTTP client: its CPU per delivery of `event`, to a receiver
 * of its own, on the server core, at most `inFlight` at a time as the endpoint takes them, each
 * sent as it comes due at `rate` a second, the pace of the changes: the same work at the same pace,
 * as the bare PATCH is measured at it. Then back to back, `inFlight` open at once, shown beside:
 * many deliveries share each wake-up there, which a paced one has to itself.
 */
async function senderCpu(options: BenchOptions, event: string, inFlight: number, rate: number): Promise<Sender> {
  const { count, warmup } = SENDER[options.smoke ? 'smoke' : options.quick ? 'quick' : 'full'];
  const receiver = new Receiver();
  try {
    const url = await receiver.listen();
    const paced = await bareDeliveries('bench/bare-sender-undici.ts', url, event, count, warmup, { BARE_IN_FLIGHT: String(inFlight), BARE_RATE: String(rate) });
    const backToBack = await bareDeliveries('bench/bare-sender-undici.ts', url, event, count, warmup, { BARE_IN_FLIGHT: String(inFlight) });
    return { us: bareCpu(paced), deliveries: paced.deliveries, inFlight, backToBackUs: bareCpu(backToBack) };
  } finally {
    receiver.close();
  }
}

/** A side's counted round with the least CPU per change: other work on a shared machine only ever adds to it. */
function leastCpu(runs: PacedRun[]): PacedRun {
  return runs.reduce((best, r) => ((r.cpuUs ?? Infinity) < (best.cpuUs ?? Infinity) ? r : best));
}

function rowsOf(scenario: string, input: PacedInput, rate: number, runs: Map<Side, PacedRun[]>, sender: Sender): Row[] {
  const bareRows = input.bares.map((side): Row => {
    const run = leastCpu(runs.get(side)!);
    return { scenario, server: side.label, result: run.result, checks: [cpuCheck(run)] };
  });
  // The bare side of the ceiling: the bare server that spent the least CPU on a change at this rate.
  const bare = input.bares
    .map((side) => ({ side, run: leastCpu(runs.get(side)!) }))
    .reduce((best, b) => ((b.run.cpuUs ?? Infinity) < (best.run.cpuUs ?? Infinity) ? b : best));
  const serviceRuns = runs.get(input.service)!;
  const service = leastCpu(serviceRuns);
  const grown = Math.max(...serviceRuns.map((r) => r.backlog!.after - r.backlog!.before));
  const slack = Math.ceil(service.result.requestsPerSecond * BACKLOG_SLACK_S);
  const keptUp = grown <= slack;
  return [
    ...bareRows,
    {
      scenario,
      server: `bare sender (undici, paced at ${rate.toLocaleString('en-US')}/s, at most ${sender.inFlight} at a time, ${sender.deliveries.toLocaleString('en-US')} deliveries)`,
      checks: [{ text: `${sender.us.toFixed(0)} µs CPU/delivery` }, { text: `back to back, ${sender.inFlight} at a time: ${sender.backToBackUs.toFixed(0)} µs CPU/delivery` }],
    },
    {
      scenario,
      server: input.service.label,
      result: service.result,
      checks: [
        combinedCheck(service, bare, sender.us, keptUp),
        backToBackCheck(service, bare, sender.backToBackUs),
        backlogCheck(service, grown, slack, keptUp),
        cpuCheck(service),
      ],
    },
  ];
}

/**
 * The service's CPU per change, its deliveries included, against the bare PATCH's plus the bare
 * sender's for the deliveries a change made in the same window: met at most PACED_TARGETS.cpuOfBare,
 * and only when the deliveries kept up.
 */
function combinedCheck(service: PacedRun, bare: { side: Side; run: PacedRun }, senderUs: number, keptUp: boolean): Check {
  const target = `≤ ${PACED_TARGETS.cpuOfBare}`;
  if (service.cpuUs === undefined || bare.run.cpuUs === undefined) return { text: 'CPU per change against the bare PATCH + the bare sender unknown (no /proc)', target, met: false };
  const perChange = service.deliveries! / service.result.ok;
  const budget = bare.run.cpuUs + senderUs * perChange;
  const value = service.cpuUs / budget;
  const text =
    `${value.toFixed(2)}× bare PATCH + bare sender: ${service.cpuUs.toFixed(0)} µs CPU/change with its deliveries against ` +
    `${bare.run.cpuUs.toFixed(0)} + ${senderUs.toFixed(0)} × ${perChange.toFixed(2)} deliveries/change${keptUp ? '' : ' (the backlog grew: not met)'}`;
  return { text, target, met: keptUp && value <= PACED_TARGETS.cpuOfBare };
}

/** The same, against the bare sender's deliveries back to back (no target): a yardstick that paces none of its work. */
function backToBackCheck(service: PacedRun, bare: { side: Side; run: PacedRun }, backToBackUs: number): Check {
  if (service.cpuUs === undefined || bare.run.cpuUs === undefined) return { text: 'CPU per change against the bare sender back to back unknown (no /proc)' };
  const budget = bare.run.cpuUs + backToBackUs * (service.deliveries! / service.result.ok);
  return { text: `${(service.cpuUs / budget).toFixed(2)}× bare PATCH + bare sender back to back` };
}

/** The endpoint's backlog at the ends of the chosen round's window, and the most any counted round's grew. */
function backlogCheck(service: PacedRun, grown: number, slack: number, keptUp: boolean): Check {
  const { before, after } = service.backlog!;
  return {
    text: `backlog ${before.toLocaleString('en-US')} → ${after.toLocaleString('en-US')} events over the window (${service.deliveries!.toLocaleString('en-US')} deliveries; most grown in a round ${grown.toLocaleString('en-US')})`,
    target: `grows ≤ ${slack.toLocaleString('en-US')}`,
    met: keptUp,
  };
}

function cpuCheck(run: PacedRun): Check {
  if (run.cpuUs === undefined) return { text: 'CPU/request unknown (no /proc)' };
  const main = run.mainUs === undefined ? '' : ` (main thread ${run.mainUs.toFixed(0)}, others ${(run.cpuUs - run.mainUs).toFixed(0)})`;
  return { text: `${run.cpuUs.toFixed(0)} µs CPU/request${main}` };
}

function pacedNote(input: PacedInput, scenario: string, rate: number, runs: Map<Side, PacedRun[]>, sender: Sender): string {
  const each = (side: Side) =>
    runs
      .get(side)!
      .map((r) => `${r.cpuUs?.toFixed(0) ?? 'unknown'}${r.backlog ? ` (backlog ${r.backlog.before} → ${r.backlog.after}, ${r.deliveries} deliveries)` : ''}`)
      .join(', ');
  return (
    `${scenario}: ${rate.toLocaleString('en-US')} PATCHes a second, ${PACED_SHARE} of the best rate of the bare server the service is gated against above, ` +
    `sent evenly by the paced generator (up to ${input.connections} connections) on the load core, ${input.options.durationSeconds} s a window with no warm-up of its own, ` +
    `one uncounted round then ${roundsText(roundsOf(input.options))} alternated between ${[...runs.keys()].map((s) => s.label).join(', ')}, after the deliveries of the last round were delivered; ` +
    "each server's CPU (all threads, /proc/PID/stat) read right before and after its load, over its 2xx answers; the round with the least CPU per change is shown. " +
    "The service's figure is its CPU per change with the deliveries its endpoint received in the same window; the ceiling is the bare server's (the one of least CPU at this rate) " +
    `plus the bare sender's CPU per delivery (bench/bare-sender-undici.ts: the service's own HTTP client and signing, ${sender.deliveries.toLocaleString('en-US')} deliveries of the service's last event, ` +
    `each sent as it came due at ${rate.toLocaleString('en-US')} a second, at most ${sender.inFlight} at a time, the endpoint's maxInFlight, to a receiver of its own, after a warm-up: the same work at the pace of the changes, ` +
    `as the bare PATCH is measured at it) times the deliveries per change; the same sender back to back, ${sender.inFlight} open at once, is shown beside, without a target; ` +
    `the endpoint's backlog (GET /v1/webhooks, from its recorded position, which the service moves once every ${FLUSH_EVERY_MS} ms while deliveries trickle in) is read before and after each window, ` +
    `and one that grew by more than ${BACKLOG_SLACK_S} s of changes (those in flight and one period not yet recorded) in any counted round makes the row not met. ` +
    (input.backend === 'postgres'
      ? "The database's own processes are on neither side: the service's figure leaves out what PostgreSQL does for its writes and its delivery log, the bare server's for its batches. "
      : '') +
    `CPU µs/request per round: ${[...runs.keys()].map((s) => `${s.label} ${each(s)}`).join('; ')}`
  );
}
