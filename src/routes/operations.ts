import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { Type } from 'typebox';
import type { Principal } from '../domain/api-key.js';
import { parsePetId } from '../domain/pet-id.js';
import { contextOf, sendAnswer } from '../http/fastify-pipeline.js';
import type { RateLimiter } from '../limits/rate-limiter.js';
import type { HeldAnswer, Operation, OperationDependencies, OperationRequest } from '../operations/handler.js';
import { NoQuery, type BodyLimits, type OperationSpec } from '../operations/operation.js';
import { acceptedInput } from '../operations/validation.js';
import { takeMore } from '../pipeline/limit-rules.js';
import type { RequestPipeline } from '../pipeline/pipeline.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The parsed petId path parameter of item routes. */
    petId: bigint;
  }
}

/** What the operations' routes need beyond the operations themselves. */
export interface OperationRoutesOptions {
  /** What the app gives the operations to answer with. */
  dependencies: OperationDependencies;
  pipeline: RequestPipeline;
  /** BODY_LIMIT and what else sizes an operation's own body limit. */
  limits: BodyLimits;
  /** The per-key rate limit, which a batch takes one request from per change; absent when off. */
  rateLimiter?: RateLimiter | undefined;
}

/**
 * Every operation as a Fastify route, from its declaration: method, URL, who may call it, the
 * schemas that check its parts, and its handler. The hot ones are usually answered before
 * Fastify by the fast lane (src/http/fast-lane.ts); both lanes call the same operations.
 */
export function registerOperations(app: FastifyInstance, operations: readonly Operation[], options: OperationRoutesOptions): void {
  app.decorateRequest('petId', 0n);
  for (const op of operations) app.route(operationRoute(op, options));
}

/** /v1/inventory/{petId} -> /v1/inventory/:petId */
export function routerPath(path: string): string {
  return path.replace(/\{(\w+)\}/g, ':$1');
}

function operationRoute(op: Operation, { dependencies, pipeline, limits, rateLimiter }: OperationRoutesOptions): RouteOptions {
  const handle = op.serve(dependencies);
  return {
    ...routeOptions(op),
    // A bad petId is 400 before the body is read (after authentication).
    ...(op.pathParams?.petId && { onRequest: parsePetIdParam }),
    ...(op.bodyLimit && { bodyLimit: op.bodyLimit(limits) }),
    handler: async (request, reply) => {
      const answer = await handle(operationRequest(request, op, rateLimiter));
      return 'hold' in answer ? hold(pipeline, request, reply, answer) : sendAnswer(reply, answer);
    },
  };
}

/** Fastify route options from a declaration: method, URL, who may call it, and the schemas that check its parts (path parameters arrive as strings). */
function routeOptions(spec: OperationSpec) {
  return {
    method: spec.method,
    url: routerPath(spec.path),
    config: { access: spec.scope ?? ('public' as const), operation: spec.operationId, accepted: acceptedInput(spec) },
    schema: {
      querystring: spec.querystring ?? NoQuery,
      ...(spec.pathParams && { params: Type.Object(Object.fromEntries(Object.keys(spec.pathParams).map((name) => [name, Type.String()]))) }),
      ...(spec.body && !spec.body.checkedByOperation && { body: spec.body.schema }),
    },
  };
}

/** Route-level onRequest hook of item routes. */
async function parsePetIdParam(request: FastifyRequest): Promise<void> {
  request.petId = parsePetId((request.params as { petId: string }).petId);
}

/** The request as operations read it: its parts, which the route's schemas checked against the declaration. */
function operationRequest(request: FastifyRequest, op: Operation, rateLimiter: RateLimiter | undefined): OperationRequest {
  const ctx = request.ctx;
  return {
    headers: request.headers,
    principal: op.scope ? principalOf(request) : null,
    requestId: request.id,
    petId: request.petId,
    params: request.params as Record<string, string> | undefined,
    query: request.query,
    body: request.body,
    chargeRequests: rateLimiter && ctx ? (count) => takeMore(rateLimiter, ctx, count) : undefined,
  };
}

/** The key that authenticated the request (the pipeline's authentication rule passed before any route runs). */
function principalOf(request: FastifyRequest): Principal {
  const principal = request.ctx?.principal;
  if (!principal) throw new Error('an authenticated route ran without a principal');
  return principal;
}

/**
 * An answer that keeps its connection: the pipeline's headers added to its own, then the response
 * handed over; its request is complete when the connection is gone.
 */
function hold(pipeline: RequestPipeline, request: FastifyRequest, reply: FastifyReply, answer: HeldAnswer): void {
  const ctx = contextOf(pipeline, request);
  const headers: (string | number)[] = Object.entries(answer.headers).flat();
  pipeline.addAnswerHeaders(
    ctx,
    (name) => answer.headers[name],
    (name, value) => void headers.push(name, value),
  );
  // A refusal is thrown before anything is written, and answered as any other.
  const closed = answer.hold(reply.raw, headers);
  // From here the answer writes to the socket itself; Fastify sends nothing more.
  reply.hijack();
  void closed.then(() => pipeline.completed(ctx, answer.status));
}
