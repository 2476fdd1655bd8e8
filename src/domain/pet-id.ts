import { ApiError } from '../errors.js';

export const INT64_MIN = -(2n ** 63n);
export const INT64_MAX = 2n ** 63n - 1n;

const CANONICAL_DECIMAL = /^-?(0|[1-9][0-9]*)$/;

/** Parses a canonical decimal int64 (no sign but minus, no leading zeros); undefined when the text is not one. */
export function tryParsePetId(text: string): bigint | undefined {
  // 20 characters hold every int64; the check also keeps BigInt() away from huge inputs.
  if (text.length > 20 || !CANONICAL_DECIMAL.test(text)) return undefined;
  const value = BigInt(text);
  return value < INT64_MIN || value > INT64_MAX ? undefined : value;
}

/** Parses a petId path segment, or throws 400 invalid_pet_id. */
export function parsePetId(text: string): bigint {
  const value = tryParsePetId(text);
  if (value === undefined) throw new ApiError('invalid_pet_id');
  return value;
}
