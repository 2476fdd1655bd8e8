// The order `npm test` starts its files in: the longest first, so the run does not end waiting on one
// long file started last; a file the table does not know (a new one) in the middle. The seconds are
// each file's time alone on a 2-core machine, rounded; they only order the run, so an old figure costs
// a little time, never a failure. The run's summary names its longest files: update the table from it
// when they change much.
import { DURATIONS } from './test-durations.mjs';

/**
 * The files that need the machine to themselves, run after the rest, one at a time: their assertions
 * hold only while the load they make is the only load (a soak with no timeout allowed, a drain that the
 * balancer must see in time, a graceful stop with no request failed).
 */
export const ALONE = new Set(['test/drill/failover.test.ts', 'test/hardening/shutdown.test.ts', 'test/hardening/soak.test.ts']);

/** `files` in the order to start them: `shared` several at a time, longest first; then `alone`, one at a time. */
export function runOrder(files) {
  const known = Object.values(DURATIONS).sort((a, b) => a - b);
  const middle = known[Math.floor(known.length / 2)] ?? 0;
  const seconds = (file) => DURATIONS[file] ?? middle;
  const longestFirst = (a, b) => seconds(b) - seconds(a) || (a < b ? -1 : a > b ? 1 : 0);
  return {
    shared: files.filter((file) => !ALONE.has(file)).sort(longestFirst),
    alone: files.filter((file) => ALONE.has(file)).sort(longestFirst),
  };
}
