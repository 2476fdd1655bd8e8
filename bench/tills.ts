import type { InventoryItem } from '../src/schemas/inventory.js';
import { ChildRunner } from './child-runner.js';
import { createDatabase, type Backend } from './databases.js';
import { describeLoadAverage } from './machine.js';
import type { BenchOptions } from './options.js';
import { ratio, type Check, type Row, type Section } from './report.js';
import { seedDatabase, seedDatabaseWith } from './seed.js';
import { startServer, type RunningServer } from './servers.js';
import { firstRound, roundOrder, roundsOf, roundsText, untilAnswered } from './side-by-side.js';
import type { ChangesJob, ChangesResult, SaleMethod, SalesJob, SalesResult, TillsJob, TillsResult } from './tills-jobs.js';

/** Tills selling at once (the issue: 50), and the pets they sell from (100). */
export const TILLS = 50;
export const TILL_PETS = 100;
/** Each till pet's stock at the start: far more than any run sells, so no sale is refused for want of stock. */
const STOCK = 100_000_000;
/** Changes in the batch, and PATCHes against it (the default BATCH_MAX_CHANGES); a tenth in a quick run, whose PATCHes one at a time would take seconds. */
export const BATCH_CHANGES = { smoke: 10, quick: 100, full: 1000 } as const;
/** The few concurrent clients that send the PATCHes in the second comparison. */
export const PATCH_CLIENTS = 10;
/** Timed repetitions of each way of making the changes, after one uncounted warm-up; the median is shown. */
const REPEATS = { smoke: 1, quick: 3, full: 5 } as const;

/** The sales-per-second figures of one way of selling, over its rounds. */
interface Till {
  method: SaleMethod;
  label: string;
  server: RunningServer;
  key: string;
  runs: SalesResult[];
  /** Every sale answered 200 over all its rounds (warm-ups included), by petId - 1. */
  sold: number[];
  unknown: number;
  refused: Record<string, number>;
  firstRefusal?: string;
}

/**
 * The tills on one backend: 50 clients selling random pets from 100 by read-modify-write (GET, then
 * PATCH with If-Match, again from the GET on 412) against the same clients selling by POST
 * .../adjustments, two servers up at once, rounds alternated; every count checked against the
 * sales made. Then 1,000 changes (100 quick) in one batch against as many PATCHes over keep-alive. The clients
 * run in a child process of their own on the load core (tills-runner.ts).
 */
export async function tillsSection(backend: Backend, title: string, options: BenchOptions): Promise<Section> {
  const section: Section & { failures: string[] } = { title, rows: [], notes: [], failures: [] };
  const runner = new ChildRunner<TillsJob, TillsResult>('bench/tills-runner.ts', 'tills clients', true);
  const before = describeLoadAverage();
  try {
    await salesRows(backend, options, runner, section);
    await changesRows(backend, options, runner, section);
  } finally {
    await runner.close();
  }
  section.notes.push(`The machine: ${before} at the start, ${describeLoadAverage()} at the end; other work on these cores slows every figure, the ratios less than the rates`);
  for (const failure of section.failures) process.stderr.write(`\nbench: FAILED: ${backend} tills: ${failure}\n\n`);
  return section;
}

async function salesRows(backend: Backend, options: BenchOptions, runner: ChildRunner<TillsJob, TillsResult>, section: Section & { failures: string[] }): Promise<void> {
  const scenario = `tills: ${TILLS} clients selling from ${TILL_PETS} pets`;
  const rounds = roundsOf(options);
  const tills: Till[] = [];
  const stocked: InventoryItem[] = Array.from({ length: TILL_PETS }, (_, i) => ({ petId: BigInt(i + 1), quantity: STOCK, status: 'available' }));
  try {
    for (const [method, label] of [
      ['read-modify-write', 'GET, then PATCH with If-Match (retry on 412)'],
      ['adjustment', 'POST …/adjustments {"delta":-1}'],
    ] as const) {
      const databaseUrl = await createDatabase(backend, `tills_${method.replaceAll('-', '_')}`);
      const key = await seedDatabaseWith(databaseUrl, stocked);
      const server = await startServer('service', { databaseUrl, key });
      tills.push({ method, label, server, key, runs: [], sold: new Array<number>(TILL_PETS).fill(0), unknown: 0, refused: {} });
    }
    for (let round = firstRound(options); round <= rounds; round++) {
      for (const till of roundOrder(tills, round)) {
        const which = round === 0 ? 'warm-up, not counted' : `round ${round}`;
        const result = await untilAnswered(
          options.durationSeconds,
          async (durationSeconds) => {
            const job: SalesJob = {
              kind: 'sales',
              baseUrl: till.server.baseUrl,
              authorization: `Bearer ${till.key}`,
              method: till.method,
              clients: TILLS,
              pets: TILL_PETS,
              warmupSeconds: options.warmupSeconds,
              durationSeconds,
            };
            const sales = (await runner.run(job)) as SalesResult;
            // Every run's sales count against the stock, a window's late answers too.
            sales.soldByPet.forEach((n, i) => (till.sold[i]! += n));
            till.unknown += sales.unknown;
            return sales;
          },
          (r) => r.sales === 0 && r.unknown === 0 && Object.keys(r.refused).length === 0,
          (seconds) => section.notes.push(`${scenario}, ${till.method}, ${which}: no answer came back within its ${seconds} s window; run again for ${seconds * 2} s`),
        );
        for (const [what, n] of Object.entries(result.refused)) till.refused[what] = (till.refused[what] ?? 0) + n;
        till.firstRefusal ??= result.firstRefusal;
        process.stderr.write(`  ${backend} | ${scenario} | ${till.method}: ${Math.round(result.perSecond)} sales/s, ${perSale(result)} retries/sale (${which})\n`);
        if (result.sales === 0) throw new Error(`${till.method}: no sale answered 200 in the ${options.durationSeconds} s window (${result.firstRefusal ?? `${result.unknown} unanswered`})`);
        if (round > 0) till.runs.push(result);
      }
    }
    for (const till of tills) section.rows.push(await tillRow(scenario, till, tills[0]!, section));
    const each = (till: Till) => till.runs.map((r) => `${Math.round(r.perSecond).toLocaleString('en-US')} (${perSale(r)})`).join(', ');
    section.notes.push(
      `${scenario}: two servers up at once, each on a fresh database of ${TILL_PETS} pets stocked ${STOCK.toLocaleString('en-US')} each; ` +
        `${TILLS} clients in one process on the load core, keep-alive, each selling a random pet, one sale at a time; a read-modify-write sale GETs the entry, ` +
        `PATCHes quantity - 1 with its ETag as If-Match and reason "sold", and on 412 starts over from the GET; an adjustment is one POST {"delta":-1,"reason":"sold"}. ` +
        `One uncounted warm-up round, then ${roundsText(rounds)} alternated (${options.warmupSeconds} s warm-up, ${options.durationSeconds} s measured each), the best of each shown; ` +
        `sales/s (retries/sale) per round: read-modify-write ${each(tills[0]!)}; adjustments ${each(tills[1]!)}. ` +
        `A sale's time runs from its first request to its 200, retries included. After the last round every pet's count must be its stock less the sales answered 200 (warm-ups and the sales in flight at each window's end included)`,
    );
  } finally {
    await Promise.all(tills.map((t) => t.server.stop()));
  }
}

/** A way of selling's best round, and whether its server's counts are its stock less every sale it answered 200. */
async function tillRow(scenario: string, till: Till, readModifyWrite: Till, section: Section & { failures: string[] }): Promise<Row> {
  const best = bestSales(till);
  const checks: Check[] = [
    { text: `${Math.round(best.perSecond).toLocaleString('en-US')} sales/s` },
    { text: `${perSale(best)} retries/sale` },
    { text: `a sale: p50 ${best.p50Ms.toFixed(2)} ms, p99 ${best.p99Ms.toFixed(2)} ms` },
  ];
  if (till !== readModifyWrite) checks.push(ratio(best.perSecond / bestSales(readModifyWrite).perSecond, 'read-modify-write'));
  checks.push(await countsCheck(till, section));
  const refusals = Object.entries(till.refused);
  if (refusals.length > 0) {
    section.notes.push(`${scenario}, ${till.method}: refused ${refusals.map(([what, n]) => `${n} × ${what}`).join(', ')}, none counted as a sale; the first: ${till.firstRefusal}`);
  }
  return { scenario, server: `service: ${till.label}`, checks };
}

/** Every pet's count against its stock less the sales answered 200: a sale lost (or one taken off twice) fails the scenario. */
async function countsCheck(till: Till, section: Section & { failures: string[] }): Promise<Check> {
  const res = await fetch(`${till.server.baseUrl}/v1/inventory`, { headers: { authorization: `Bearer ${till.key}` } });
  if (res.status !== 200) throw new Error(`GET /v1/inventory answered ${res.status} after the ${till.method} sales`);
  const items = (await res.json()) as { petId: number; quantity: number }[];
  const sales = till.sold.reduce((a, b) => a + b, 0);
  let lost = 0;
  let extra = 0;
  let wrongPets = 0;
  for (let i = 0; i < TILL_PETS; i++) {
    const item = items.find((it) => Number(it.petId) === i + 1);
    const off = STOCK - (item?.quantity ?? STOCK);
    if (off !== till.sold[i]) wrongPets++;
    // Fewer taken off than sold: sales answered 200 that the count does not show.
    if (off < till.sold[i]!) lost += till.sold[i]! - off;
    else extra += off - till.sold[i]!;
  }
  const target = 'counts = stock − sales';
  const unknown = till.unknown > 0 ? `; ${till.unknown} sales got no answer, so may or may not have been taken off` : '';
  if (wrongPets === 0) return { text: `counts match ${sales.toLocaleString('en-US')} sales${unknown}`, target, met: true };
  const lostText = lost > 0 ? `${lost} SALES LOST (answered 200, not in the counts)` : '';
  const extraText = extra > 0 ? `${extra} taken off beyond the sales answered 200${till.unknown >= extra ? ' (no more than the sales that got no answer)' : ''}` : '';
  const text = `${[lostText, extraText].filter(Boolean).join(', ')} on ${wrongPets} of ${TILL_PETS} pets, of ${sales.toLocaleString('en-US')} sales${unknown}`;
  // Taken off beyond the 200s is explained only by the sales whose answer never came; a lost sale never is.
  if (lost > 0 || extra > till.unknown) section.failures.push(`${till.method}: ${text}`);
  return { text, target, met: false };
}

/** 1,000 changes (100 quick) in one batch against as many PATCHes, one client one after another and PATCH_CLIENTS at once, alternated on one server. */
async function changesRows(backend: Backend, options: BenchOptions, runner: ChildRunner<TillsJob, TillsResult>, section: Section & { failures: string[] }): Promise<void> {
  const mode = options.smoke ? 'smoke' : options.quick ? 'quick' : 'full';
  const changes = BATCH_CHANGES[mode];
  const repeats = REPEATS[mode];
  const scenario = `${changes.toLocaleString('en-US')} changes (set counts)`;
  const databaseUrl = await createDatabase(backend, 'tills_batch');
  const key = await seedDatabase(databaseUrl, changes);
  const server = await startServer('service', { databaseUrl, key });
  const ways: { label: string; how: ChangesJob['how']; connections: number; ms: number[] }[] = [
    { label: 'one POST /v1/inventory/batch', how: 'batch', connections: 1, ms: [] },
    { label: `${changes.toLocaleString('en-US')} PATCHes, one client, one after another`, how: 'patch', connections: 1, ms: [] },
    { label: `${changes.toLocaleString('en-US')} PATCHes, ${PATCH_CLIENTS} clients at once`, how: 'patch', connections: PATCH_CLIENTS, ms: [] },
  ];
  let firstQuantity = 0;
  try {
    for (let round = 0; round <= repeats; round++) {
      for (const way of roundOrder(ways, round)) {
        firstQuantity += changes;
        const job: ChangesJob = { kind: 'changes', baseUrl: server.baseUrl, authorization: `Bearer ${key}`, how: way.how, connections: way.connections, pets: changes, firstQuantity };
        const { ms } = (await runner.run(job)) as ChangesResult;
        if (round > 0) way.ms.push(ms);
      }
    }
    // The last job's counts are what every pet must hold now.
    const res = await fetch(`${server.baseUrl}/v1/inventory`, { headers: { authorization: `Bearer ${key}` } });
    const items = (await res.json()) as { petId: number; quantity: number }[];
    const wrong = items.filter((it) => it.quantity !== firstQuantity + Number(it.petId) - 1).length;
    if (res.status !== 200 || items.length !== changes || wrong > 0) {
      throw new Error(`after the changes, GET /v1/inventory answered ${res.status} with ${items.length} entries, ${wrong} of them not the counts last set`);
    }
  } finally {
    await server.stop();
  }
  const median = (ms: number[]) => [...ms].sort((a, b) => a - b)[ms.length >> 1]!;
  const batch = median(ways[0]!.ms);
  for (const way of ways) {
    const ms = median(way.ms);
    const perSecond = Math.round((changes / ms) * 1000).toLocaleString('en-US');
    const checks: Check[] = [{ text: `${ms.toFixed(1)} ms (${perSecond} changes/s)` }];
    if (way.how !== 'batch') checks.push({ text: `${(ms / batch).toFixed(2)}× the batch's time` });
    section.rows.push({ scenario, server: `service: ${way.label}`, checks });
  }
  section.notes.push(
    `${scenario}: one server on a fresh database of ${changes.toLocaleString('en-US')} pets; each way sets every pet to a count it did not hold ` +
      `(the batch as ${changes.toLocaleString('en-US')} {"petId","quantity"} changes in one request, checked item by item; the PATCHes over keep-alive connections opened beforehand), ` +
      `from the clients' process on the load core, timed from the first request sent to the last answer read; one uncounted warm-up, then ${repeats} repetitions alternated, the median shown; ` +
      `ms each: ${ways.map((w) => `${w.how === 'batch' ? 'batch' : `PATCH × ${w.connections}`} ${w.ms.map((m) => m.toFixed(0)).join(', ')}`).join('; ')}`,
  );
}

/** Retries per sale, two decimals. */
function perSale(r: SalesResult): string {
  return r.sales === 0 ? 'n/a' : (r.retries / r.sales).toFixed(2);
}

/** The round with the most sales a second: other work on a shared machine only ever slows a round down. */
function bestSales(till: Till): SalesResult {
  return till.runs.reduce((a, b) => (b.perSecond > a.perSecond ? b : a));
}
