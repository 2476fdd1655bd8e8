import type { FastifyInstance } from 'fastify';
import { ApiError } from '../errors.js';

/** Media types a JSON body may be sent as (PD 3.5). */
export const JSON_MEDIA_TYPES = ['application/json', 'application/merge-patch+json'] as const;

/** Keys that could reach an object's prototype if ever merged (PD 3.4). */
const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/**
 * Replaces Fastify's body parsers with one strict JSON parser: any other media type is 415,
 * bad JSON is malformed_json, and prototype keys are refused before anything sees the body.
 */
export function registerJsonBodyParser(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser([...JSON_MEDIA_TYPES], { parseAs: 'string' }, (request, text, done) => {
    try {
      done(null, parseJsonBody(request.headers['content-type'], text as string));
    } catch (err) {
      done(err as Error, undefined);
    }
  });
}

/**
 * Whether Fastify would pass a body of this Content-Type to our parser, for its common spellings
 * only: the fast lane (src/http/fast-lane.ts) takes these and leaves every other one to Fastify.
 */
export function isPlainJsonContentType(contentType: string | undefined): boolean {
  return contentType !== undefined && PLAIN_JSON_CONTENT_TYPES.has(contentType.toLowerCase());
}

const PLAIN_JSON_CONTENT_TYPES = new Set(JSON_MEDIA_TYPES.flatMap((t) => [t, `${t}; charset=utf-8`, `${t};charset=utf-8`]));

/** The body of a request with a JSON media type, or an ApiError: wrong charset, empty, not JSON, prototype keys. */
export function parseJsonBody(contentType: string | undefined, text: string): unknown {
  const charset = /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(contentType ?? '')?.[1];
  if (charset !== undefined && !/^utf-?8$/i.test(charset)) {
    throw new ApiError('unsupported_media_type', `The body must be UTF-8 JSON; charset "${charset}" is not supported.`);
  }
  if (text.trim() === '') throw new ApiError('missing_field', 'The request body is empty; send a JSON object such as {"quantity": 5}.');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    // Only the position is repeated: the parser's own message may quote the body.
    const position = /position (\d+)/.exec((err as Error).message)?.[1];
    throw new ApiError('malformed_json', `The request body is not valid JSON${position ? ` (error at character ${position})` : ''}.`);
  }
  const forbidden = findForbiddenKey(value);
  if (forbidden !== undefined) throw new ApiError('unknown_field', `Field "${forbidden}" is not allowed.`);
  return value;
}

function findForbiddenKey(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  for (const key of Object.keys(value)) {
    if (FORBIDDEN_KEYS.has(key)) return key;
    const nested = findForbiddenKey((value as Record<string, unknown>)[key]);
    if (nested !== undefined) return nested;
  }
  return undefined;
}
