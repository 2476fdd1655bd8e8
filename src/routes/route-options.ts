import type { FastifyRequest } from 'fastify';
import { Type, type TObject, type TString } from 'typebox';
import type { Principal } from '../domain/api-key.js';
import { parsePetId } from '../domain/pet-id.js';
import { NoQuery, type OperationSpec } from '../operations/operation.js';
import { acceptedInput } from '../operations/validation.js';
import type { ChangeRequest } from '../operations/change-request.js';

/** /v1/inventory/{petId} -> /v1/inventory/:petId */
export function routerPath(path: string): string {
  return path.replace(/\{(\w+)\}/g, ':$1');
}

/** The route's schemas, typed from the declaration: what the TypeBox type provider types request.params, query and body by. */
type RouteSchema<S> = { querystring: S extends { querystring: infer Q extends TObject } ? Q : typeof NoQuery } & (S extends {
  pathParams: infer P extends object;
}
  ? { params: TObject<{ [K in keyof P]: TString }> }
  : unknown) &
  (S extends { body: { checkedByOperation: true } } ? unknown : S extends { body: { schema: infer B extends TObject } } ? { body: B } : unknown);

/**
 * Fastify route options from an operation's declaration: method, URL, who may call it, and the
 * schemas that validate and type its parts (path parameters arrive as strings; the route parses
 * them). The caller adds the handler.
 */
export function routeOptions<const S extends OperationSpec>(spec: S) {
  const schema = {
    querystring: spec.querystring ?? NoQuery,
    ...(spec.pathParams && { params: Type.Object(Object.fromEntries(Object.keys(spec.pathParams).map((name) => [name, Type.String()]))) }),
    ...(spec.body && !spec.body.checkedByOperation && { body: spec.body.schema }),
  };
  return {
    method: spec.method,
    url: routerPath(spec.path),
    config: { access: spec.scope ?? ('public' as const), operation: spec.operationId, accepted: acceptedInput(spec) },
    schema: schema as RouteSchema<S>,
  };
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The parsed petId path parameter of item routes. */
    petId: bigint;
  }
}

/** Route-level onRequest hook of item routes: a bad petId is 400 before the body is read (after authentication). */
export async function parsePetIdParam(request: FastifyRequest<{ Params: { petId: string } }>): Promise<void> {
  request.petId = parsePetId(request.params.petId);
}

/** The key that authenticated the request (the pipeline's authentication rule passed before any route runs). */
export function principalOf(request: FastifyRequest): Principal {
  const principal = request.ctx?.principal;
  if (!principal) throw new Error('an authenticated route ran without a principal');
  return principal;
}

/** What an operation that changes counts reads of a request: its headers, who sent it and its id. */
export function changeRequestOf(request: FastifyRequest): ChangeRequest {
  return { headers: request.headers, principal: principalOf(request), requestId: request.id };
}
