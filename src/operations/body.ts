import type { IncomingHttpHeaders } from 'node:http';
import type { Static, TObject } from 'typebox';
import { ApiError } from '../errors.js';
import { exactIntegers } from '../json.js';
import type { OperationSpec } from './operation.js';
import { compileSchemaValidator } from './schema-validator.js';
import { acceptedInput, validationToApiError } from './validation.js';

/** Media types a JSON body may be sent as. */
export const JSON_MEDIA_TYPES = ['application/json', 'application/merge-patch+json'] as const;

/** Keys that could reach an object's prototype if ever merged: refused, never merged. */
const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/** How deep arrays and objects may nest in a body: far above any real body, far below what a walk of it could cost. */
export const MAX_BODY_DEPTH = 32;

/**
 * Whether Fastify would pass a body of this Content-Type to our parser, for its common spellings
 * only: the fast lane takes these and leaves every other one to Fastify.
 */
export function isPlainJsonContentType(contentType: string | undefined): boolean {
  return contentType !== undefined && PLAIN_JSON_CONTENT_TYPES.has(contentType.toLowerCase());
}

const PLAIN_JSON_CONTENT_TYPES = new Set(JSON_MEDIA_TYPES.flatMap((t) => [t, `${t}; charset=utf-8`, `${t};charset=utf-8`]));

/**
 * The body of a request with a JSON media type, or an ApiError: a content coding (the body would
 * be read as what it is not), wrong charset, not JSON, nested too deep, prototype keys. An empty
 * body is undefined, as no body is: the operation's check names the fields it needs. An integer
 * beyond 2^53 is a bigint, every digit kept (decisions 3.2: a petId in a batch).
 */
export function parseJsonBody(headers: Pick<IncomingHttpHeaders, 'content-type' | 'content-encoding'>, text: string): unknown {
  const contentEncoding = headers['content-encoding'];
  if (contentEncoding !== undefined && !isIdentityCoding(contentEncoding)) {
    throw new ApiError('unsupported_media_type', 'The body must be sent without a content coding (Content-Encoding: identity or none).');
  }
  const charset = /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(headers['content-type'] ?? '')?.[1];
  if (charset !== undefined && !/^utf-?8$/i.test(charset)) {
    throw new ApiError('unsupported_media_type', `The body must be UTF-8 JSON; charset "${charset}" is not supported.`);
  }
  if (text.trim() === '') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    // Only the position is repeated: the parser's own message may quote the body.
    const position = /position (\d+)/.exec((err as Error).message)?.[1];
    throw new ApiError('malformed_json', `The request body is not valid JSON${position ? ` (error at character ${position})` : ''}.`);
  }
  checkStructure(value);
  return exactIntegers(text, value);
}

/** Every coding in a Content-Encoding list is identity (or the list is empty): the body is the bytes as sent. */
function isIdentityCoding(header: string): boolean {
  return header.split(',').every((coding) => {
    const name = coding.trim().toLowerCase();
    return name === '' || name === 'identity';
  });
}

/**
 * Refuses prototype keys anywhere and nesting beyond MAX_BODY_DEPTH. A loop over an explicit
 * list, not recursion: a body must never be able to overflow the stack (a 12 KB body nests 6,000 deep).
 */
function checkStructure(root: unknown): void {
  if (typeof root !== 'object' || root === null) return;
  const pending: [value: object, depth: number][] = [[root, 1]];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [value, depth] = next;
    if (depth > MAX_BODY_DEPTH) throw new ApiError('invalid_body', `The request body nests deeper than ${MAX_BODY_DEPTH} levels.`);
    for (const key of Object.keys(value)) {
      if (FORBIDDEN_KEYS.has(key)) throw new ApiError('unknown_field', `Field "${key}" is not allowed.`);
      const member = (value as Record<string, unknown>)[key];
      if (typeof member === 'object' && member !== null) pending.push([member, depth + 1]);
    }
  }
}

/**
 * The operation's body check, compiled the way Fastify compiles it for the route (the same
 * compiler, the same schema), so that both lanes refuse a body with the same error.
 */
export function bodyValidator<S extends TObject>(spec: OperationSpec & { body: { schema: S } }): (body: unknown) => Static<S> {
  const check = compileSchemaValidator({ schema: spec.body.schema, httpPart: 'body' });
  const accepted = acceptedInput(spec);
  return (body) => {
    const checked = check(body);
    if (checked.error) throw validationToApiError(checked.error, 'body', body, accepted);
    return body as Static<S>;
  };
}
