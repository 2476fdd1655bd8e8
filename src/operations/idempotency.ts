import { createHash } from 'node:crypto';
import { ApiError } from '../errors.js';

/** Idempotency keys are kept this long (IETF httpapi Idempotency-Key draft: the server's choice). */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

const KEY = /^[\x21-\x7e]{1,255}$/;

/**
 * The Idempotency-Key header's value: a structured-field string ("...") as the draft has it, or
 * the same text bare as many clients send it. Undefined when absent; 400 when malformed.
 */
export function parseIdempotencyKey(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  let value = header.trim();
  if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
  if (!KEY.test(value) || value.includes('"')) {
    throw new ApiError('invalid_parameter', 'Idempotency-Key must be 1 to 255 printable ASCII characters, e.g. a UUID.');
  }
  return value;
}

/**
 * The refusal of a new Idempotency-Key while the API key holds `recordsPerKey` live records
 * (decisions 7.2): 429, retry once the oldest expires (at least 1 s from now).
 */
export function idempotencyRecordsFull(recordsPerKey: number, retryAt: Date, now = Date.now()): ApiError {
  const seconds = Math.max(1, Math.ceil((retryAt.getTime() - now) / 1000));
  return new ApiError(
    'rate_limited',
    `This API key holds ${recordsPerKey} idempotency records, the most it may keep at once; retry in ${seconds} s, when the oldest expires.`,
    { 'retry-after': String(seconds) },
  );
}

/** What makes two requests "the same" for an idempotency key: operation, target and body, ignoring JSON spacing and key order. */
export function requestFingerprint(operation: string, target: string, body: unknown): string {
  return createHash('sha256').update(`${operation}\n${target}\n${canonicalJson(body)}`).digest('hex');
}

function canonicalJson(value: unknown): string {
  // The body parser reads an integer beyond 2^53 as a bigint (a batch's petId): its digits, as sent.
  if (typeof value === 'bigint') return value.toString();
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
