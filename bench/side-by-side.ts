import type { Backend } from './databases.js';
import type { LoadGenerator } from './load.js';
import type { LoadResult, LoadSpec } from './load-spec.js';
import type { WindowHooks } from './load-wrk.js';
import type { BenchOptions } from './options.js';
import type { Check } from './report.js';
import { CLOCK_TICKS, cpuTicks, mainThreadCpuTicks } from './processes.js';
import { PATCH_CONNECTIONS } from './scenarios.js';
import type { RunningServer } from './servers.js';

/** Counted rounds per server in a side-by-side comparison (after one uncounted warm-up round). */
const ROUNDS = 3;
/** A round's window is lengthened up to this while nothing at all comes back in it. */
const MAX_WINDOW_S = 8;

/**
 * Runs a load for `seconds`, and again twice as long each time, up to MAX_WINDOW_S, while nothing at
 * all came back in its window (a smoke run's quarter second on a busy machine, a cold server): such
 * a window says nothing yet. `notes` says each time it was run again; the last result is returned.
 */
export async function untilAnswered<R>(
  seconds: number,
  run: (seconds: number) => Promise<R>,
  nothingBack: (result: R) => boolean,
  note: (seconds: number) => void,
): Promise<R> {
  for (;;) {
    const result = await run(seconds);
    if (!nothingBack(result) || seconds * 2 > MAX_WINDOW_S) return result;
    note(seconds);
    seconds *= 2;
  }
}

/** The counted rounds of this run: one in a quick run, whose figures are for orientation only (CI runs it to keep the harness working). */
export function roundsOf(options: Pick<BenchOptions, 'quick'>): number {
  return options.quick ? 1 : ROUNDS;
}

/** The first round of a comparison: 0 is the uncounted warm-up, which a smoke run (its figures meaningless) leaves out. */
export function firstRound(options: Pick<BenchOptions, 'smoke'>): number {
  return options.smoke ? 1 : 0;
}

/** "1 round", "3 rounds": how a report's notes count them. */
export function roundsText(rounds: number): string {
  return rounds === 1 ? '1 round' : `${rounds} rounds`;
}

/** One server of a side-by-side comparison, and what it has measured. */
export interface Side {
  label: string;
  server: RunningServer;
  key: string;
  runs: LoadResult[];
  /** With `cpu`: per counted round, the server's CPU time over the measured window per 2xx answer, in µs (undefined without /proc). */
  cpuUs?: (number | undefined)[];
  /** The same, of its main thread alone (the event loop); the rest is its other threads' (a writer thread, V8's GC helpers). */
  mainCpuUs?: (number | undefined)[];
  /**
   * Work the server does beside answering the load, counted so far (the deliveries its webhook
   * endpoint has received): read with its CPU at both ends of each measured window, so a row can
   * say how much of that work its figures carry.
   */
  counter?: () => number;
  /** With a counter: per counted round, how much it counted during the measured window (undefined where the load ran no window). */
  counted?: (number | undefined)[];
}

/** What each round sends: the requests, their pets and connections, and whether the servers' CPU is read. Default: the PATCH load of the main table. */
export interface RoundShape {
  method: LoadSpec['method'];
  petCount: number;
  connections: number;
  /** Read each server's CPU time (/proc/PID/stat) right before and after its measured window; wrk only. */
  cpu?: boolean;
  /** Awaited before each load: until a server's background work left from the last one is done, so it takes no CPU from the next. */
  settle?: () => Promise<void>;
}

/**
 * Loads alternated between servers that are up at once (the order swapped each round, so none
 * always runs first): round 0 warms them up (the JIT, the database's caches) and is not counted,
 * then roundsOf(options) rounds, each recorded in its side's `runs`; a round with failures is noted.
 */
export async function alternateRounds(
  sides: Side[],
  scenario: string,
  backend: Backend,
  options: BenchOptions,
  load: LoadGenerator,
  notes: string[],
  shape: RoundShape = { method: 'PATCH', petCount: options.sizes[1], connections: PATCH_CONNECTIONS },
): Promise<void> {
  for (let round = firstRound(options), rounds = roundsOf(options); round <= rounds; round++) {
    for (const side of roundOrder(sides, round)) {
      await shape.settle?.();
      let before: WindowReading | undefined;
      let after: WindowReading | undefined;
      const counter = side.counter;
      const window = shape.cpu
        ? {
            start: () => void (before = readWindow(side.server.pid, counter)),
            end: () => void (after = readWindow(side.server.pid, counter)),
          }
        : undefined;
      const which = round === 0 ? 'warm-up, not counted' : `round ${round}`;
      const result = await untilAnswered(
        options.durationSeconds,
        (durationSeconds) =>
          load.run(
            {
              baseUrl: side.server.baseUrl,
              method: shape.method,
              authorization: `Bearer ${side.key}`,
              petCount: shape.petCount,
              connections: shape.connections,
              warmupSeconds: options.warmupSeconds,
              durationSeconds,
            },
            true,
            window,
          ),
        (r) => r.ok === 0 && r.failed === 0,
        (seconds) => notes.push(`${scenario}, ${side.label}, ${which}: no answer came back within its ${seconds} s window; run again for ${seconds * 2} s`),
      );
      const cpuUs = perAnswerUs(before?.all, after?.all, result.ok);
      const cpu = cpuUs === undefined ? '' : `, ${cpuUs.toFixed(0)} µs CPU/request`;
      process.stderr.write(`  ${backend} | ${scenario} | ${side.label}: ${Math.round(result.requestsPerSecond)} req/s${cpu} (${which})\n`);
      if (result.ok === 0) throw new Error(`${side.label} answered no 2xx during "${scenario}" (${result.failed} failures)`);
      if (round === 0) continue;
      if (result.failed > 0) notes.push(`${scenario}, ${side.label}, round ${round}: ${result.failed} non-2xx answers or socket errors, left out of req/s`);
      side.runs.push(result);
      if (shape.cpu) {
        (side.cpuUs ??= []).push(cpuUs);
        (side.mainCpuUs ??= []).push(perAnswerUs(before?.main, after?.main, result.ok));
        if (counter) (side.counted ??= []).push(grown(before?.count, after?.count));
      }
    }
  }
}

/**
 * For one load outside the rounds: hooks that read the server's CPU at both ends of its measured
 * window (wrk only), then its CPU per 2xx answer over that window, all threads and the main thread
 * alone, in µs (undefined without /proc or without the readings).
 */
export function cpuWindow(pid: number | undefined): { hooks: WindowHooks; perAnswerUs(answers: number): { all?: number; main?: number } } {
  let before: WindowReading | undefined;
  let after: WindowReading | undefined;
  return {
    hooks: { start: () => void (before = readWindow(pid, undefined)), end: () => void (after = readWindow(pid, undefined)) },
    perAnswerUs: (answers) => ({ all: perAnswerUs(before?.all, after?.all, answers), main: perAnswerUs(before?.main, after?.main, answers) }),
  };
}

/** What is read at each end of a measured window: the process's CPU ticks so far (all its threads, and its main thread alone, each undefined without /proc), and its side's counter, if it has one. */
interface WindowReading {
  all: number | undefined;
  main: number | undefined;
  count: number | undefined;
}

function readWindow(pid: number | undefined, counter: (() => number) | undefined): WindowReading {
  return { all: cpuTicks(pid), main: mainThreadCpuTicks(pid), count: counter?.() };
}

/** How much a reading grew over a window; undefined without both ends. */
function grown(before: number | undefined, after: number | undefined): number | undefined {
  return before === undefined || after === undefined ? undefined : after - before;
}

/** CPU ticks over a window per answer, in µs; undefined without both readings or any answer. */
function perAnswerUs(before: number | undefined, after: number | undefined, answers: number): number | undefined {
  const ticks = grown(before, after);
  return ticks === undefined || answers === 0 ? undefined : ((ticks / CLOCK_TICKS.perSecond) * 1e6) / answers;
}

/** The sides in the order they run in this round: swapped each round, so none always runs first. */
export function roundOrder<T>(sides: readonly T[], round: number): T[] {
  return round % 2 === 1 ? [...sides] : [...sides].reverse();
}

/** A side's best round: other work on a shared machine only ever slows a round down. */
export function bestRun(side: Side): LoadResult {
  return side.runs[bestIndex(side)]!;
}

/** The server's CPU per 2xx answer in its best round, in µs. */
export function bestCpuUs(side: Side): number | undefined {
  return side.cpuUs?.[bestIndex(side)];
}

/** Its main thread's CPU per 2xx answer in the same round, in µs. */
export function bestMainCpuUs(side: Side): number | undefined {
  return side.mainCpuUs?.[bestIndex(side)];
}

/** The best round's CPU per request, all threads and its main thread's share, as a value for its row. */
export function cpu(side: Side): Check {
  const us = bestCpuUs(side);
  const main = bestMainCpuUs(side);
  if (us === undefined) return { text: 'CPU/request unknown (no /proc)' };
  return { text: main === undefined ? `${us.toFixed(0)} µs CPU/request` : `${us.toFixed(0)} µs CPU/request (main thread ${main.toFixed(0)}, others ${(us - main).toFixed(0)})` };
}

/** What its counter counted during the same round's window; undefined without a counter. */
export function bestCounted(side: Side): number | undefined {
  return side.counted?.[bestIndex(side)];
}

function bestIndex(side: Side): number {
  return side.runs.reduce((best, r, i) => (r.requestsPerSecond > side.runs[best]!.requestsPerSecond ? i : best), 0);
}

/** Each counted round's req/s, for the notes. */
export function eachRun(side: Side): string {
  return side.runs.map((r) => Math.round(r.requestsPerSecond).toLocaleString('en-US')).join(', ');
}

/** Each counted round's CPU per request in µs, with its main thread's share, for the notes. */
export function eachCpu(side: Side): string {
  return (side.cpuUs ?? [])
    .map((us, i) => {
      const main = side.mainCpuUs?.[i];
      return us === undefined ? 'unknown' : main === undefined ? us.toFixed(0) : `${us.toFixed(0)} (main thread ${main.toFixed(0)})`;
    })
    .join(', ');
}

/** Each counted round's count, for the notes ('' without a counter). */
export function eachCounted(side: Side): string {
  return (side.counted ?? []).map((n) => (n === undefined ? 'unknown' : n.toLocaleString('en-US'))).join(', ');
}
