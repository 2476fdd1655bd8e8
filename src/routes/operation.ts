import type { FastifyRequest } from 'fastify';
import { Type, type TObject, type TSchema } from 'typebox';
import type { Scope } from '../domain/api-key.js';
import { requireScope } from '../http/auth.js';
import type { ErrorCode } from '../errors.js';

export type HttpMethod = 'GET' | 'PATCH' | 'POST' | 'PUT' | 'DELETE';

export interface ResponseSpec {
  description: string;
  /** The body of a success response; absent for responses without a body. */
  schema?: TSchema;
  /** For an error response: the codes its Error body can carry. */
  errorCodes?: readonly ErrorCode[];
  /** Response headers beyond the common ones; `required` ones are always sent with this status. */
  headers?: Record<string, { description: string; schema: TSchema; required?: boolean }>;
}

/**
 * One API operation, described once: the route is registered from it and the OpenAPI document
 * is built from it, so the two cannot disagree.
 */
export interface OperationSpec {
  operationId: string;
  method: HttpMethod;
  /** OpenAPI form, e.g. /v1/inventory/{petId}. */
  path: string;
  summary: string;
  description: string;
  tags: string[];
  /** The scope a key needs; undefined marks a public (unauthenticated) operation. */
  scope: Scope | undefined;
  pathParams?: Record<string, TSchema>;
  /** Request headers the operation reads (extensions such as If-Match), for the document. */
  requestHeaders?: Record<string, { description: string; schema: TSchema }>;
  querystring?: TObject;
  body?: { schema: TSchema; contentTypes: readonly string[]; description: string };
  /** Success and operation-specific error responses; the common errors are added for every operation. */
  responses: Record<number, ResponseSpec>;
  /** Statuses the spec itself lists for this operation; the document marks every other one x-extension. */
  contractStatuses?: readonly number[];
  /** Vendor extensions for the document (PD 1.2, 1.3). */
  extensions?: Record<`x-${string}`, unknown>;
}

/** /v1/inventory/{petId} -> /v1/inventory/:petId */
export function routerPath(path: string): string {
  return path.replace(/\{(\w+)\}/g, ':$1');
}

/** Empty query: an operation that declares no query parameters refuses any (invalid_parameter). */
export const NoQuery = Type.Object({}, { additionalProperties: false });

type OnRequestHook = (request: FastifyRequest) => Promise<void>;

/**
 * Fastify route options for an operation: method, URL, validation and serialisation schemas,
 * and its scope check before any `extraOnRequest` hooks. The caller adds the handler.
 */
export function routeOptions(spec: OperationSpec, ...extraOnRequest: OnRequestHook[]) {
  const response: Record<number, TSchema> = {};
  for (const [status, r] of Object.entries(spec.responses)) if (r.schema) response[Number(status)] = r.schema;
  return {
    method: spec.method,
    url: routerPath(spec.path),
    config: { public: spec.scope === undefined },
    schema: { querystring: spec.querystring ?? NoQuery, ...(spec.body ? { body: spec.body.schema } : {}), response },
    onRequest: [...(spec.scope ? [requireScope(spec.scope)] : []), ...extraOnRequest],
  };
}
