import { isLosslessNumber, parse, stringify } from 'lossless-json';
import { INT64_PROPERTIES } from './generated/openapi.js';

export const INT64 = new Set(INT64_PROPERTIES);

/**
 * int64 members (petId) become bigint from their digits, other numbers number: JSON.parse would round them first.
 *
 * lossless-json everywhere, for now. parseJsonNative (json-native.ts, loaded by its test and benchmark
 * only) answers the same, but measured slower wherever
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

/** JSON text of a request body: a bigint is written as its digits (JSON.stringify throws on it). */
export function stringifyJson(value: unknown): string {
  return stringify(value) ?? 'null';
}
