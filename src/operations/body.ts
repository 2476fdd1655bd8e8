import { TypeBoxValidatorCompiler } from '@fastify/type-provider-typebox';
import type { Static, TObject } from 'typebox';
import { ApiError } from '../errors.js';
import type { OperationSpec } from './operation.js';
import { validationToApiError, type SchemaError } from './validation.js';

/** Media types a JSON body may be sent as. */
export const JSON_MEDIA_TYPES = ['application/json', 'application/merge-patch+json'] as const;

/** Keys that could reach an object's prototype if ever merged: refused, never merged. */
const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/**
 * Whether Fastify would pass a body of this Content-Type to our parser, for its common spellings
 * only: the fast lane takes these and leaves every other one to Fastify.
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

/** The fields an operation's body accepts, for messages. */
export function bodyFields(spec: OperationSpec): string[] {
  return Object.keys(spec.body?.schema.properties ?? {});
}

/**
 * The operation's body check, compiled the way Fastify compiles it for the route (the same
 * compiler, the same schema), so that both lanes refuse a body with the same error.
 */
export function bodyValidator<S extends TObject>(spec: OperationSpec & { body: { schema: S } }): (body: unknown) => Static<S> {
  const check = TypeBoxValidatorCompiler({ schema: spec.body.schema, method: spec.method, url: spec.path, httpPart: 'body' }) as (
    body: unknown,
  ) => { value?: unknown; error?: SchemaError[] };
  const fields = bodyFields(spec);
  return (body) => {
    const checked = check(body);
    if (checked.error) throw validationToApiError(checked.error, 'body', body, fields);
    return body as Static<S>;
  };
}
