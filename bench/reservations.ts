import type { InventoryItem } from '../src/schemas/inventory.js';
import { ChildRunner } from './child-runner.js';
import type { CheckoutJob, CheckoutMethod, CheckoutResult } from './checkout-clients.js';
import { createDatabase, type Backend } from './databases.js';
import { describeLoadAverage } from './machine.js';
import type { BenchOptions } from './options.js';
import { ratio, type Check, type Section } from './report.js';
import { seedDatabaseWith } from './seed.js';
import { startServer, type RunningServer } from './servers.js';
import { firstRound, roundOrder, roundsOf, roundsText } from './side-by-side.js';

/** Clients writing at once, and the pets they write to: the tills' load (tills.ts). */
const CLIENTS = 50;
const PETS = 100;
/** Each pet's stock: far more than any run sells, so no checkout is refused for want of stock. */
const STOCK = 100_000_000;
/** Reservation writes (creations and commits) at 0.8 of PATCH's throughput at least, request for request (decisions 12.9). */
const GOAL = 0.8;

interface Way {
  method: CheckoutMethod;
  label: string;
  server: RunningServer;
  key: string;
  runs: CheckoutResult[];
  /** Checkouts committed over every round, warm-ups included, by petId - 1. */
  sold: number[];
  unknown: number;
  refused: Record<string, number>;
  firstRefusal?: string;
}

/**
 * Reservations on one backend: 50 clients each checking out 1 of a random pet from 100 (POST
 * /v1/reservations, then POST .../commit) against the same clients setting counts with PATCH, two
 * servers up at once, rounds alternated; then every count is checked against the checkouts
 * committed and every hold against none left. The clients run in a child process of their own on
 * the load core (checkout-runner.ts).
 */
export async function reservationsSection(backend: Backend, title: string, options: BenchOptions): Promise<Section> {
  const section: Section & { failures: string[] } = { title, rows: [], notes: [], failures: [] };
  const runner = new ChildRunner<CheckoutJob, CheckoutResult>('bench/checkout-runner.ts', 'checkout clients', true);
  const before = describeLoadAverage();
  const scenario = `${CLIENTS} clients writing to ${PETS} pets`;
  const rounds = roundsOf(options);
  const ways: Way[] = [];
  const stocked: InventoryItem[] = Array.from({ length: PETS }, (_, i) => ({ petId: BigInt(i + 1), quantity: STOCK, status: 'available' }));
  try {
    for (const [method, label] of [
      ['patch', 'PATCH /v1/inventory/{petId} {"quantity"}'],
      ['reserve-commit', 'POST /v1/reservations of 1, then POST …/commit'],
    ] as const) {
      const databaseUrl = await createDatabase(backend, `reservations_${method.replaceAll('-', '_')}`);
      const key = await seedDatabaseWith(databaseUrl, stocked);
      const server = await startServer('service', { databaseUrl, key });
      ways.push({ method, label, server, key, runs: [], sold: new Array<number>(PETS).fill(0), unknown: 0, refused: {} });
    }
    for (let round = firstRound(options); round <= rounds; round++) {
      for (const way of roundOrder(ways, round)) {
        const job: CheckoutJob = {
          baseUrl: way.server.baseUrl,
          authorization: `Bearer ${way.key}`,
          method: way.method,
          clients: CLIENTS,
          pets: PETS,
          warmupSeconds: options.warmupSeconds,
          durationSeconds: options.durationSeconds,
        };
        const result = await runRound(runner, job, way);
        result.soldByPet.forEach((n, i) => (way.sold[i]! += n));
        way.unknown += result.unknown;
        for (const [what, n] of Object.entries(result.refused)) way.refused[what] = (way.refused[what] ?? 0) + n;
        way.firstRefusal ??= result.firstRefusal;
        const which = round === 0 ? 'warm-up, not counted' : `round ${round}`;
        process.stderr.write(`  ${backend} | reservations | ${way.method}: ${Math.round(result.perSecond)}/s, ${Math.round(result.requestsPerSecond)} requests/s (${which})\n`);
        if (round > 0) way.runs.push(result);
      }
    }
    const [patch, checkout] = ways as [Way, Way];
    const bestPatch = best(patch);
    const bestCheckout = best(checkout);
    section.rows.push({ scenario, server: `service: ${patch.label}`, checks: [...rates(bestPatch, 'PATCHes')] });
    section.rows.push({
      scenario,
      server: `service: ${checkout.label}`,
      checks: [
        ...rates(bestCheckout, 'checkouts'),
        ratio(bestCheckout.requestsPerSecond / bestPatch.requestsPerSecond, 'PATCH (requests/s: a creation or a commit against a PATCH)', GOAL),
        // Two durable answers against one: at most 0.5 (decisions 12.9).
        ratio(bestCheckout.perSecond / bestPatch.perSecond, 'PATCH (checkouts/s against PATCHes/s; at most 0.5)'),
        await countsCheck(checkout, section),
      ],
    });
    for (const way of ways) {
      const refusals = Object.entries(way.refused);
      if (refusals.length > 0) section.notes.push(`${way.method}: refused ${refusals.map(([what, n]) => `${n} × ${what}`).join(', ')}; the first: ${way.firstRefusal}`);
    }
    const each = (way: Way) => way.runs.map((r) => Math.round(r.perSecond).toLocaleString('en-US')).join(', ');
    section.notes.push(
      `${scenario}: two servers up at once, each on a fresh database of ${PETS} pets stocked ${STOCK.toLocaleString('en-US')} each; ${CLIENTS} clients in one process on the load core, keep-alive, ` +
        `each writing to a random pet, one write at a time: a PATCH sets a count; a checkout reserves 1 (201) and commits it (200), two requests, timed from the first to the second's answer. ` +
        `One uncounted warm-up round, then ${roundsText(rounds)} alternated (${options.warmupSeconds} s warm-up, ${options.durationSeconds} s measured each), the best of each shown; ` +
        `per second per round: PATCH ${each(patch)}; checkouts ${each(checkout)}. The goal (≥ ${GOAL}× PATCH) counts each request, a creation or a commit, against one PATCH: each is one durable write`,
    );
  } finally {
    await runner.close();
    await Promise.all(ways.map((w) => w.server.stop()));
  }
  section.notes.push(`The machine: ${before} at the start, ${describeLoadAverage()} at the end; other work on these cores slows every figure, the ratios less than the rates`);
  for (const failure of section.failures) process.stderr.write(`\nbench: FAILED: ${backend} reservations: ${failure}\n\n`);
  return section;
}

/** Times a round's window may double when nothing finished in it (a loaded machine, a cold server), before the run fails. */
const LONGER_WINDOWS = 4;

/**
 * One round; a window in which no write finished and none was refused (the first checkouts of a
 * cold server on a loaded machine can take longer than a smoke run's quarter second) is run again
 * over one twice as long, so only a refusal or a server that never answers ends the run.
 */
async function runRound(runner: ChildRunner<CheckoutJob, CheckoutResult>, job: CheckoutJob, way: Way): Promise<CheckoutResult> {
  for (let attempt = 0; ; attempt++) {
    const durationSeconds = job.durationSeconds * 2 ** attempt;
    const result = await runner.run({ ...job, durationSeconds });
    if (result.done > 0) return result;
    // What the empty window did still counts for the checks at the end.
    result.soldByPet.forEach((n, i) => (way.sold[i]! += n));
    way.unknown += result.unknown;
    const refused = Object.keys(result.refused).length > 0;
    if (refused || attempt === LONGER_WINDOWS) throw new Error(`${way.method}: nothing answered in a ${durationSeconds} s window (${result.firstRefusal ?? `${result.unknown} unanswered`})`);
    process.stderr.write(`  ${way.method}: nothing finished in ${durationSeconds} s; again over ${durationSeconds * 2} s\n`);
  }
}

function rates(r: CheckoutResult, what: string): Check[] {
  return [
    { text: `${Math.round(r.perSecond).toLocaleString('en-US')} ${what}/s` },
    { text: `${Math.round(r.requestsPerSecond).toLocaleString('en-US')} requests/s` },
    { text: `p50 ${r.p50Ms.toFixed(2)} ms, p99 ${r.p99Ms.toFixed(2)} ms` },
  ];
}

/** Every pet's count against its stock less the checkouts committed, and nothing left held: a lost sale or a stray hold fails the scenario. */
async function countsCheck(way: Way, section: Section & { failures: string[] }): Promise<Check> {
  const res = await fetch(`${way.server.baseUrl}/v1/inventory`, { headers: { authorization: `Bearer ${way.key}` } });
  if (res.status !== 200) throw new Error(`GET /v1/inventory answered ${res.status} after the checkouts`);
  const items = (await res.json()) as { petId: number; quantity: number; reserved: number }[];
  const sold = way.sold.reduce((a, b) => a + b, 0);
  let wrong = 0;
  let held = 0;
  for (let i = 0; i < PETS; i++) {
    const item = items.find((it) => Number(it.petId) === i + 1);
    if (STOCK - (item?.quantity ?? STOCK) !== way.sold[i]) wrong++;
    held += item?.reserved ?? 0;
  }
  const target = 'counts = stock − checkouts, nothing held';
  if (wrong === 0 && held === 0) return { text: `counts match ${sold.toLocaleString('en-US')} checkouts, nothing held`, target, met: true };
  const text = `${wrong} of ${PETS} counts differ from stock − ${sold.toLocaleString('en-US')} checkouts committed, ${held} units still held`;
  // A checkout with no answer may have held or sold without the clients knowing; anything beyond those is wrong.
  if (wrong + held > way.unknown) section.failures.push(`reserve-commit: ${text}`);
  return { text: `${text}${way.unknown > 0 ? `; ${way.unknown} requests got no answer` : ''}`, target, met: false };
}

/** The round with the most writes a second: other work on a shared machine only ever slows a round down. */
function best(way: Way): CheckoutResult {
  return way.runs.reduce((a, b) => (b.perSecond > a.perSecond ? b : a));
}
