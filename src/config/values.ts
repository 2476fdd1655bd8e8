import { UNIT_MS } from '../domain/duration.js';
import { ConfigError } from './error.js';
import type { SettingValue } from './setting.js';

/** A whole number from `min` to `max`; `default` may be undefined (the setting is off unless set). */
export function integer<D extends number | undefined>(spec: { default: D; min: number; max: number }): SettingValue<number | D> {
  const { min, max } = spec;
  const accepts = `a whole number from ${min} to ${max}`;
  return {
    default: spec.default,
    accepts,
    bounds: { min, max },
    parse(name, text) {
      const value = /^\d+$/.test(text) ? Number(text) : NaN;
      if (!Number.isSafeInteger(value) || value < min || value > max) throw new ConfigError(`${name} must be ${accepts}, got "${text}"`);
      return value;
    },
  };
}

/** One of the words in `allowed`, exactly. */
export function oneOf<const T extends string>(allowed: readonly T[], spec: { default: NoInfer<T> }): SettingValue<T> {
  const accepts = `one of ${allowed.join(', ')}`;
  return {
    default: spec.default,
    accepts,
    parse(name, text) {
      if (!(allowed as readonly string[]).includes(text)) throw new ConfigError(`${name} must be ${accepts}, got "${text}"`);
      return text as T;
    },
  };
}

/** `true` or `false`, exactly. */
export function boolean(spec: { default: boolean }): SettingValue<boolean> {
  const word = oneOf(['true', 'false'], { default: String(spec.default) as 'true' | 'false' });
  return { default: spec.default, accepts: word.accepts, parse: (name, text) => word.parse(name, text) === 'true' };
}

/** Any text: a host name or address, checked when it is used (listen), not here. */
export function text<D extends string | undefined>(spec: { default: D; accepts: string }): SettingValue<string | D> {
  return { default: spec.default, accepts: spec.accepts, parse: (_name, value) => value };
}

/** Text that matches `pattern`, which `accepts` says in words. */
export function matching(pattern: RegExp, spec: { default: string; accepts: string }): SettingValue<string> {
  return {
    default: spec.default,
    accepts: spec.accepts,
    parse(name, value) {
      if (!pattern.test(value)) throw new ConfigError(`${name} must be ${spec.accepts}, got "${value}"`);
      return value;
    },
  };
}

const MiB = 1024 * 1024;
const SIZE_UNITS: Record<string, number> = { '': 1, b: 1, kb: 1000, kib: 1024, k: 1024, mb: 1e6, mib: MiB, m: MiB };

/** A number of bytes from 1 to 64MiB, bare or with a unit (16KiB, 1MB). */
export function byteSize(spec: { default: number }): SettingValue<number> {
  const accepts = 'a size from 1 byte to 64MiB, such as 16384 or 16KiB';
  const bounds = { min: 1, max: 64 * MiB };
  return {
    default: spec.default,
    accepts,
    bounds,
    parse(name, text) {
      const match = /^(\d+)\s*([a-z]*)$/i.exec(text);
      const unit = match ? SIZE_UNITS[match[2]!.toLowerCase()] : undefined;
      const value = match && unit !== undefined ? Number(match[1]) * unit : NaN;
      if (!Number.isSafeInteger(value) || value < bounds.min || value > bounds.max) throw new ConfigError(`${name} must be ${accepts}, got "${text}"`);
      return value;
    },
  };
}

/** The units of a duration (domain/duration.ts) but weeks, and milliseconds besides: a retry may come within a second. */
const DELAY_UNITS_MS: Record<string, number> = { ms: 1, s: UNIT_MS.s, m: UNIT_MS.m, h: UNIT_MS.h, d: UNIT_MS.d };
const DELAY = /^([0-9]{1,9})(ms|s|m|h|d)$/;

/** A comma-separated list of waits, each a whole number with ms, s, m, h or d (5s,5m,2h), from 1 ms to 7 days, at most `maxItems`; in ms. */
export function delayList(spec: { default: string; maxItems: number }): SettingValue<number[]> {
  const accepts = `a comma-separated list of at most ${spec.maxItems} waits, each a whole number followed by ms, s, m, h or d (such as 5s,5m,2h), from 1ms to 7d`;
  const parse = (name: string, text: string): number[] => {
    const waits = text.split(',').map((item) => {
      const match = DELAY.exec(item.trim());
      const ms = match ? Number(match[1]) * DELAY_UNITS_MS[match[2]!]! : NaN;
      if (!(ms >= 1 && ms <= 7 * DELAY_UNITS_MS.d!)) throw new ConfigError(`${name} must be ${accepts}, got "${text}"`);
      return ms;
    });
    if (waits.length > spec.maxItems) throw new ConfigError(`${name} must be ${accepts}, got "${text}"`);
    return waits;
  };
  return { default: parse('default', spec.default), defaultText: spec.default, accepts, parse };
}
