import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Answer } from '../operations/answer.js';
import { ApiError } from '../errors.js';
import type { Access, RequestContext } from '../pipeline/context.js';
import type { RequestPipeline } from '../pipeline/pipeline.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Who may call the route; unset: any valid key (the answers to unknown paths and methods). */
    access?: Access;
    /** The route's label in the metrics: its operationId, or a fixed word (OTHER_OPERATIONS); unset: not_found or other. */
    operation?: string;
  }
  interface FastifyRequest {
    /** The request's pipeline context; null until the first onRequest hook (or the first of the pipeline's uses) sets it. */
    ctx: RequestContext | null;
  }
}

/** The request's context: the one the fast lane handed over, or one made now, kept on the request. */
export function contextOf(pipeline: RequestPipeline, request: FastifyRequest, operation?: string): RequestContext {
  const config = request.routeOptions.config;
  request.ctx ??= pipeline.contextOf(request.raw, config.access ?? 'key', request.id, operation ?? config.operation ?? (request.is404 ? 'not_found' : 'other'));
  return request.ctx;
}

/**
 * Fastify's executor of the request pipeline (src/pipeline/): the rules run, in their order, in the
 * first onRequest hook, before routing details, body parsing and validation, continuing where the
 * fast lane stopped if it began; every answer gets the pipeline's headers on its way out.
 */
export function registerPipeline(app: FastifyInstance, pipeline: RequestPipeline): void {
  app.decorateRequest('ctx', null);
  app.addHook('onRequest', async (request, reply) => {
    const verdict = await pipeline.run(contextOf(pipeline, request));
    if (verdict instanceof ApiError) throw verdict;
    // A rule that answers (a CORS preflight): sent as it is, with the pipeline's headers (onSend).
    if (verdict) return sendAnswer(reply, verdict);
  });
  app.addHook('onSend', async (request, reply) => {
    pipeline.addAnswerHeaders(
      contextOf(pipeline, request),
      (name) => headerText(reply.getHeader(name)),
      (name, value) => {
        reply.header(name, value);
      },
    );
  });
  app.addHook('onResponse', async (request, reply) => {
    pipeline.completed(contextOf(pipeline, request), reply.statusCode);
  });
}

/** A reply header as one string, or undefined when unset. */
function headerText(value: string | number | string[] | undefined): string | undefined {
  return value === undefined ? undefined : Array.isArray(value) ? value.join(', ') : String(value);
}

/** Sends an operation's answer through Fastify (the pipeline's headers are added on the way out). */
export function sendAnswer(reply: FastifyReply, answer: Answer): FastifyReply {
  return reply.code(answer.status).headers(answer.headers).send(answer.body);
}
