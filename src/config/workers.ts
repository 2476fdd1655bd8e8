import { availableParallelism } from 'node:os';
import { ConfigError } from './error.js';
import type { SettingValue } from './setting.js';

const MAX_WORKERS = 64;

/**
 * How many processes `serve` runs: a whole number from 1 to 64, or `auto` for one per available
 * CPU. It trims its text itself, and its message echoes the text as given, as it always has.
 */
export function workerCount(spec: { default: number }): SettingValue<number> {
  const accepts = `a whole number from 1 to ${MAX_WORKERS}, or "auto" (one per CPU)`;
  return {
    default: spec.default,
    accepts,
    bounds: { min: 1, max: MAX_WORKERS },
    parse(name, text) {
      const value = text.trim();
      if (value === 'auto') return Math.min(availableParallelism(), MAX_WORKERS);
      const count = /^\d+$/.test(value) ? Number(value) : NaN;
      if (!Number.isSafeInteger(count) || count < 1 || count > MAX_WORKERS) throw new ConfigError(`${name} must be ${accepts}, got "${text}"`);
      return count;
    },
  };
}
