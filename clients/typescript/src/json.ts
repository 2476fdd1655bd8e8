import { isLosslessNumber, parse, stringify } from 'lossless-json';
import { INT64_PROPERTIES } from './generated/openapi.js';

const INT64 = new Set(INT64_PROPERTIES);

/** int64 members (petId) become bigint from their digits, other numbers number: JSON.parse would round them first. */
export function parseJson(text: string): unknown {
  return parse(text, (key, value) => {
    if (!isLosslessNumber(value)) return value;
    // valueOf gives a number when exact, a bigint for a big integer, and throws rather than round.
    return INT64.has(key) ? BigInt(value.value) : value.valueOf();
  });
}

/** JSON text of a request body: a bigint is written as its digits (JSON.stringify throws on it). */
export function stringifyJson(value: unknown): string {
  return stringify(value) ?? 'null';
}
