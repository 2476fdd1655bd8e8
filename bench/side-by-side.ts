import type { Backend } from './databases.js';
import type { LoadGenerator } from './load.js';
import type { LoadResult } from './load-spec.js';
import type { BenchOptions } from './options.js';
import { PATCH_CONNECTIONS } from './scenarios.js';
import type { RunningServer } from './servers.js';

/** Counted PATCH rounds per server in a side-by-side comparison (after one uncounted warm-up round). */
export const ROUNDS = 3;

/** One server of a side-by-side comparison, and what it has measured. */
export interface Side {
  label: string;
  server: RunningServer;
  key: string;
  runs: LoadResult[];
}

/**
 * PATCH loads alternated between servers that are up at once (the order swapped each round, so
 * none always runs first): round 0 warms them up (the JIT, the database's caches) and is not
 * counted, then ROUNDS rounds, each recorded in its side's `runs`; a round with failures is noted.
 */
export async function alternatePatchRounds(sides: Side[], scenario: string, backend: Backend, options: BenchOptions, load: LoadGenerator, notes: string[]): Promise<void> {
  for (let round = 0; round <= ROUNDS; round++) {
    for (const side of roundOrder(sides, round)) {
      const result = await load.run({
        baseUrl: side.server.baseUrl,
        method: 'PATCH',
        authorization: `Bearer ${side.key}`,
        petCount: options.sizes[1],
        connections: PATCH_CONNECTIONS,
        warmupSeconds: options.warmupSeconds,
        durationSeconds: options.durationSeconds,
      });
      const which = round === 0 ? 'warm-up, not counted' : `round ${round}`;
      process.stderr.write(`  ${backend} | ${scenario} | ${side.label}: ${Math.round(result.requestsPerSecond)} req/s (${which})\n`);
      if (result.ok === 0) throw new Error(`${side.label} answered no 2xx during "${scenario}" (${result.failed} failures)`);
      if (round === 0) continue;
      if (result.failed > 0) notes.push(`${scenario}, ${side.label}, round ${round}: ${result.failed} non-2xx answers or socket errors, left out of req/s`);
      side.runs.push(result);
    }
  }
}

/** The sides in the order they run in this round: swapped each round, so none always runs first. */
export function roundOrder<T>(sides: readonly T[], round: number): T[] {
  return round % 2 === 1 ? [...sides] : [...sides].reverse();
}

/** A side's best round: other work on a shared machine only ever slows a round down. */
export function bestRun(side: Side): LoadResult {
  return side.runs.reduce((a, b) => (b.requestsPerSecond > a.requestsPerSecond ? b : a));
}

/** Each counted round's req/s, for the notes. */
export function eachRun(side: Side): string {
  return side.runs.map((r) => Math.round(r.requestsPerSecond).toLocaleString('en-US')).join(', ');
}
