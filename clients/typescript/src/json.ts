import { isLosslessNumber, LosslessNumber, parse, stringify } from 'lossless-json';
import { INT64_PROPERTIES } from './generated/openapi.js';

const INT64 = new Set(INT64_PROPERTIES);

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
 * int64 members (petId) become bigint from their digits, other numbers number: JSON.parse would round them first.
 *
 * lossless-json everywhere, for now. parseJsonNative answers the same, but measured slower wherever
 * it runs (a 100,000-entry list, bench/client-json.ts: Node 22 235 ms against 176 ms, Node 24 192
 * against 142, Chromium 156 214 against 157): V8 spends more on calling a reviver for every value,
 * even one that does nothing, than lossless-json spends on the whole parse. Where that changes, pick
 * `NATIVE_JSON_SOURCE ? parseJsonNative : parseJsonLossless` here.
 */
export const parseJson: (text: string) => unknown = parseJsonLossless;

/**
 * parseJson with lossless-json: every number arrives as its text. A key given twice keeps its last
 * value, as JSON.parse does (lossless-json would throw), so both parsers agree on every input.
 */
export function parseJsonLossless(text: string): unknown {
  return parse(
    text,
    (key, value) => {
      if (!isLosslessNumber(value)) return value;
      // valueOf gives a number when exact, a bigint for a big integer, and throws rather than round.
      return INT64.has(key) ? BigInt(value.value) : value.valueOf();
    },
    { onDuplicateKey: ({ newValue }) => newValue },
  );
}

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

/** JSON text of a request body: a bigint is written as its digits (JSON.stringify throws on it). */
export function stringifyJson(value: unknown): string {
  return stringify(value) ?? 'null';
}
