import type { TSchema } from 'typebox';
import { ERROR_CATALOGUE, ERROR_CODES, type ErrorCode } from '../errors.js';
import { BODY_SHAPE_ERROR_CODES, FIELD_ERROR_CODES } from '../operations/validation.js';
import { ErrorSchema, PET_ID_INT64_NOTE } from '../schemas/inventory.js';
import type { NamedSchema, OperationSpec, ResponseSpec, Tag } from '../operations/operation.js';

export const API_PREFIX = '/v1';

/** The spec's Error object: every operation's error answers are it, or an operation's own errorSchema built on it. */
const ERROR_COMPONENT: NamedSchema = { name: 'Error', schema: ErrorSchema };

export interface DocumentOptions {
  /** Production base URL ending in /v1, when configured. */
  productionUrl: string | undefined;
  /** Staging base URL ending in /v1, when configured. */
  stagingUrl: string | undefined;
  bodyLimit: number;
  /** The body limit of each operation whose limit is not bodyLimit (the batch's), by operationId. */
  bodyLimits?: Readonly<Record<string, number>>;
}

/** The OpenAPI 3.1 document of the operations under /v1, built from their declarations, with the closed set of error codes. */
export function buildOpenApiDocument(operations: readonly OperationSpec[], options: DocumentOptions): Record<string, unknown> {
  const names = componentNames(operations);
  const refs = schemaRefs(names);
  const paths: Record<string, Record<string, unknown>> = {};
  for (const op of operations) {
    if (!op.path.startsWith(`${API_PREFIX}/`)) continue;
    const path = op.path.slice(API_PREFIX.length);
    paths[path] = { ...paths[path], [op.method.toLowerCase()]: operationObject(op, options, refs) };
  }
  const components: Record<string, unknown> = {};
  for (const [schema, name] of names) components[name] = refs(schema, schema);
  return {
    openapi: '3.1.0',
    info: {
      title: 'Pet Store Inventory Service',
      version: '1.0.0',
      description: INFO_DESCRIPTION,
      contact: { name: 'Pet Store Inventory Service maintainers' },
      license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
    },
    servers: servers(options),
    security: [{ bearerAuth: [] }],
    tags: documentTags(operations),
    paths,
    components: {
      schemas: components,
      securitySchemes: {
        bearerAuth: {
          type: 'http',
          scheme: 'bearer',
          description:
            'An API key as the bearer token. Keys hold the scope inventory:read (GET) or inventory:write (GET and PATCH), ' +
            'and webhooks:manage to read the webhook endpoints; ' +
            'production and staging keys differ by prefix and each environment accepts only its own.',
        },
      },
      headers: {
        'X-Request-Id': {
          description: 'The request id: the client\'s X-Request-Id when it sent a sane one, else a new one. Logs carry it too.',
          schema: { type: 'string' },
        },
        'RateLimit-Policy': {
          description: 'The per-key rate limit (IETF draft), on every answer to an authenticated key: `"default";q=<requests>;w=60`.',
          schema: { type: 'string' },
        },
        RateLimit: {
          description: 'What is left of the key\'s quota (IETF draft): `"default";r=<remaining>;t=<seconds to the reset>`.',
          schema: { type: 'string' },
        },
      },
    },
  };
}

/** Every tag the operations name, once, in the order they first name it. */
function documentTags(operations: readonly OperationSpec[]): Tag[] {
  const tags = new Map<string, Tag>();
  for (const tag of operations.flatMap((op) => op.tags)) {
    const known = tags.get(tag.name);
    if (known && known.description !== tag.description) throw new Error(`the tag ${tag.name} is declared two ways`);
    if (!known) tags.set(tag.name, { name: tag.name, description: tag.description });
  }
  return [...tags.values()];
}

/**
 * The named schemas of the document, in its order: those the operations name, in their order,
 * then the spec's Error and the operations' own error schemas. A name or a schema named twice
 * over differently is a mistake in the declarations.
 */
function componentNames(operations: readonly OperationSpec[]): Map<TSchema, string> {
  const named = [
    ...operations.flatMap((op) => Object.entries(op.components ?? {}).map(([name, schema]) => ({ name, schema }))),
    ERROR_COMPONENT,
    ...operations.flatMap((op) => (op.errorSchema ? [op.errorSchema] : [])),
  ];
  const names = new Map<TSchema, string>();
  const schemas = new Map<string, TSchema>();
  for (const { name, schema } of named) {
    if ((names.get(schema) ?? name) !== name || (schemas.get(name) ?? schema) !== schema) throw new Error(`the component ${name} is declared two ways`);
    names.set(schema, name);
    schemas.set(name, schema);
  }
  return names;
}

/**
 * The configured base URLs; with none, the relative `/v1`, which resolves against wherever the
 * document was fetched from, so "try it" and generated clients reach the host that served it
 * instead of a made-up one.
 */
function servers(options: DocumentOptions): { url: string; description: string }[] {
  const configured = [
    ...(options.productionUrl ? [{ url: options.productionUrl, description: 'Production' }] : []),
    ...(options.stagingUrl ? [{ url: options.stagingUrl, description: 'Staging' }] : []),
  ];
  return configured.length > 0 ? configured : [{ url: API_PREFIX, description: 'The service that serves this document' }];
}

/**
 * `text` as literal Markdown: each character a renderer could take for markup (an HTML tag such as
 * the `<key>` in "Bearer <key>", emphasis, code, a link, a table's cell border) backslash-escaped.
 */
function markdownText(text: string): string {
  return text.replace(/[\\`*_[\]<>|&~]/g, '\\$&');
}

/** The markdown table of every error code: the one list integrators look codes up in. */
function errorCodeTable(): string {
  const rows = ERROR_CODES.map((code) => `| \`${code}\` | ${ERROR_CATALOGUE[code].status} | ${markdownText(ERROR_CATALOGUE[code].message)} |`);
  return ['| Code | Status | Meaning |', '| --- | --- | --- |', ...rows].join('\n');
}

const INFO_DESCRIPTION = [
  'The stock-level interface of a pet store: list the stock of every pet and set one pet\'s stock count.',
  '## petIds are int64',
  `Every petId, in paths and in bodies, is one. ${PET_ID_INT64_NOTE} The service reads and writes every petId exactly; a client must too, or a PATCH meant for one pet can set another.`,
  '## Errors',
  'Every error answers with the Error object `{code, message, status}`; its `code` is one of this closed set:',
  errorCodeTable(),
].join('\n\n');

function operationObject(op: OperationSpec, options: DocumentOptions, refs: Refs): Record<string, unknown> {
  const parameters: Record<string, unknown>[] = Object.entries(op.pathParams ?? {}).map(([name, schema]) => ({
    name,
    in: 'path',
    required: true,
    description: (schema as { description?: string }).description,
    schema: refs({ ...schema, description: undefined }),
  }));
  for (const [name, schema] of Object.entries(op.querystring?.properties ?? {})) {
    const { description, ...rest } = schema as TSchema & { description?: string };
    parameters.push({ name, in: 'query', required: false, description, schema: refs(rest), 'x-extension': true });
  }
  for (const [name, header] of Object.entries(op.requestHeaders ?? {})) {
    parameters.push({ name, in: 'header', required: false, description: header.description, schema: refs(header.schema), 'x-extension': true });
  }
  const responses: Record<string, unknown> = {};
  const all = { ...commonErrorResponses(op, options), ...op.responses };
  for (const status of Object.keys(all).map(Number).sort((a, b) => a - b)) {
    responses[String(status)] = responseObject(status, all[status]!, op, refs);
  }
  return {
    operationId: op.operationId,
    summary: op.summary,
    description: op.scope ? `${op.description}\n\nRequires the scope \`${op.scope}\`.` : op.description,
    tags: op.tags.map((tag) => tag.name),
    ...(op.scope ? {} : { security: [] }),
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(op.body
      ? {
          requestBody: {
            required: true,
            description: op.body.description,
            content: Object.fromEntries(op.body.contentTypes.map((t) => [t, { schema: refs(op.body!.schema) }])),
          },
        }
      : {}),
    responses,
    ...op.extensions,
  };
}

/** The errors every operation can answer with, given what it takes (auth, parameters, body). */
function commonErrorResponses(op: OperationSpec, options: DocumentOptions): Record<number, ResponseSpec> {
  const badRequest: ErrorCode[] = [];
  if (op.pathParams?.petId) badRequest.push('invalid_pet_id');
  badRequest.push('invalid_parameter');
  if (op.body) {
    badRequest.push(...BODY_SHAPE_ERROR_CODES);
    const fields = Object.keys((op.body.schema as { properties?: object }).properties ?? {});
    for (const f of fields) if (FIELD_ERROR_CODES[f]) badRequest.push(FIELD_ERROR_CODES[f]);
  }
  const out: Record<number, ResponseSpec> = {
    400: { description: 'The request has an invalid parameter or body', errorCodes: badRequest },
    500: { description: 'Unexpected error; the message is generic and the logs hold the details', errorCodes: ['internal_error'] },
    503: { description: 'The store is unreachable, the service is overloaded, or it is shutting down', errorCodes: ['service_unavailable'] },
  };
  if (op.scope) {
    out[401] = { description: 'API key missing or invalid', errorCodes: ['unauthorized'] };
    // Every key holds at least inventory:read (keys create adds it), so only other operations can answer 403.
    if (op.scope !== 'inventory:read') out[403] = { description: `The API key lacks the scope ${op.scope}`, errorCodes: ['forbidden'] };
    out[429] = { description: 'Too many requests from this API key this minute, or too many failed authentications from this address', errorCodes: ['rate_limited'] };
  }
  if (op.body) {
    out[413] = { description: `The body is larger than ${options.bodyLimits?.[op.operationId] ?? options.bodyLimit} bytes`, errorCodes: ['payload_too_large'] };
    out[415] = { description: `The body is not ${op.body.contentTypes.join(' or ')}`, errorCodes: ['unsupported_media_type'] };
  }
  return out;
}

function responseObject(status: number, r: ResponseSpec, op: OperationSpec, refs: Refs): Record<string, unknown> {
  const headers: Record<string, unknown> = { 'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' } };
  if (status === 401) headers['WWW-Authenticate'] = { description: 'Bearer realm="inventory", with error="invalid_token" when a token was sent', schema: { type: 'string' } };
  if (status === 429 || status === 503) headers['Retry-After'] = { description: 'Seconds to wait before retrying', schema: { type: 'integer' } };
  // Answers to a key that passed authentication, when the rate limit is on.
  if (op.scope && status !== 401) {
    headers['RateLimit-Policy'] = { $ref: '#/components/headers/RateLimit-Policy' };
    headers.RateLimit = { $ref: '#/components/headers/RateLimit' };
  }
  for (const [name, h] of Object.entries(r.headers ?? {})) {
    headers[name] = { description: h.description, ...(h.required ? { required: true } : {}), schema: refs(h.schema) };
  }
  let schema: unknown;
  if (r.errorCodes) {
    schema = {
      allOf: [
        refs((op.errorSchema ?? ERROR_COMPONENT).schema),
        { type: 'object', properties: { code: { enum: r.errorCodes }, status: { const: status } } },
      ],
    };
  } else if (r.schema) {
    schema = refs(r.schema);
  }
  const extension = !op.contractStatuses?.includes(status);
  return {
    description: r.description,
    headers,
    ...(schema ? { content: { [r.contentType ?? 'application/json']: { schema } } } : {}),
    ...(extension ? { 'x-extension': true } : {}),
  };
}

/** A copy of `schema` with named schemas (other than `self`) replaced by $ref. */
type Refs = (schema: unknown, self?: TSchema) => unknown;

/** The copier of schemas for a document whose named schemas are `names`. */
function schemaRefs(names: ReadonlyMap<TSchema, string>): Refs {
  const refs: Refs = (schema, self) => {
    if (typeof schema !== 'object' || schema === null) return schema;
    const name = names.get(schema);
    if (name && schema !== self) return { $ref: `#/components/schemas/${name}` };
    if (Array.isArray(schema)) return schema.map((s) => refs(s));
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(schema)) if (value !== undefined) out[key] = refs(value);
    return out;
  };
  return refs;
}

