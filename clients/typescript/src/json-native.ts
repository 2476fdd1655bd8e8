import { LosslessNumber } from 'lossless-json';
import { INT64 } from './json.js';

// The parser the client does not use (see parseJson in json.ts): kept with its test and benchmark,
// apart, so that programs using the client never run its feature check.

/** What JSON.parse passes a reviver as its third argument where it can (ES2026 "JSON.parse source text access"). */
interface ReviverContext {
  /** The JSON text of a primitive value (for a number: its digits as written). */
  source?: string;
}

/**
 * Whether this platform's JSON.parse hands a reviver the source text of each number (Node 22 and
 * later, Chromium); Node 20 does not. Asked once, when the module loads.
 */
export const NATIVE_JSON_SOURCE: boolean = (() => {
  let source: string | undefined;
  JSON.parse('1', (_key, value: unknown, context?: ReviverContext) => {
    source = context?.source;
    return value;
  });
  return source === '1';
})();

/**
 * parseJson with the platform's JSON.parse, which must pass the reviver the source text (see
 * NATIVE_JSON_SOURCE). Answers exactly what parseJsonLossless answers: int64 members from their
 * digits; another number as it parsed when that is a non-zero safe integer (nearly every one),
 * else as lossless-json converts its text (a bigint for a big integer, an error for a number that
 * overflows or underflows).
 */
export function parseJsonNative(text: string): unknown {
  return JSON.parse(text, (key, value: unknown, context?: ReviverContext) => {
    if (typeof value !== 'number') return value;
    const source = context!.source!;
    if (INT64.has(key)) return BigInt(source);
    // 0 may be an underflow (1e-400), which lossless-json refuses: only a written 0 is taken as it is.
    if (Number.isSafeInteger(value) && (value !== 0 || source === '0')) return value;
    return new LosslessNumber(source).valueOf();
  });
}
