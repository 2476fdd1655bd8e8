import { ApiError } from '../errors.js';
import type { VersionCondition } from '../domain/inventory.js';

const ENTITY_TAG = /^(W\/)?"[\x21\x23-\x7e]*"$/;
const OUR_TAG = /^"v([1-9]\d{0,14})"$/;

/**
 * The version condition an If-Match header sets (undefined when absent). Weak tags never
 * match under If-Match's strong comparison (RFC 9110 13.1.1); a malformed header is 400.
 */
export function parseIfMatch(header: string | undefined): VersionCondition | undefined {
  if (header === undefined) return undefined;
  const value = header.trim();
  if (value === '*') return { anyVersion: true };
  const tags = value.split(',').map((t) => t.trim());
  if (tags.some((t) => !ENTITY_TAG.test(t))) {
    throw new ApiError('invalid_parameter', 'If-Match must be "*" or a list of entity tags such as "v3", as sent in ETag.');
  }
  const versions = tags.map((t) => OUR_TAG.exec(t)?.[1]).filter((v) => v !== undefined).map(Number);
  return { anyVersion: false, versions };
}

/** Whether If-None-Match names one of `etags` (weak comparison, RFC 9110 13.1.2), so a GET can answer 304. */
export function ifNoneMatchHits(header: string | undefined, etags: readonly string[]): boolean {
  if (header === undefined) return false;
  if (header.trim() === '*') return true;
  return header.split(',').some((t) => etags.includes(t.trim().replace(/^W\//, '')));
}
