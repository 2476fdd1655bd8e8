/**
 * How hard the tests that try to break the service push: `short` (the default, what `npm test`
 * and CI run) or `full` (HARDENING_SCALE=full, what each `npm run test:NAME` script runs).
 */
export const HARDENING_SCALE: 'short' | 'full' = process.env.HARDENING_SCALE === 'full' ? 'full' : 'short';

/** The short run's value, or the full run's. */
export function byScale<T>(short: T, full: T): T {
  return HARDENING_SCALE === 'full' ? full : short;
}
