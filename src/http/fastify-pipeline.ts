import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Answer } from '../operations/answer.js';
import type { Access, RequestContext } from '../pipeline/context.js';
import type { RequestPipeline } from '../pipeline/pipeline.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Who may call the route; unset: any valid key (the answers to unknown paths and methods). */
    access?: Access;
  }
  interface FastifyRequest {
    /** The request's pipeline context; set by the first onRequest hook. */
    ctx: RequestContext;
  }
}

/** The request's context: the one the fast lane made before leaving the request to Fastify, or a new one. */
export function contextOf(pipeline: RequestPipeline, request: FastifyRequest): RequestContext {
  return pipeline.contextOf(request.raw, request.routeOptions.config.access ?? 'key', request.id);
}

/**
 * Fastify's executor of the request pipeline (src/pipeline/): the rules run, in their order, in the
 * first onRequest hook, before routing details, body parsing and validation, continuing where the
 * fast lane stopped if it began; every answer gets the pipeline's headers on its way out.
 */
export function registerPipeline(app: FastifyInstance, pipeline: RequestPipeline): void {
  app.decorateRequest('ctx', null as unknown as RequestContext);
  app.addHook('onRequest', async (request) => {
    request.ctx = contextOf(pipeline, request);
    const refusal = await pipeline.run(request.ctx);
    if (refusal) throw refusal;
  });
  app.addHook('onSend', async (request, reply) => {
    reply.headers(pipeline.answerHeaders(contextOf(pipeline, request), (name) => reply.hasHeader(name)));
  });
  app.addHook('onResponse', async (request, reply) => {
    pipeline.completed(contextOf(pipeline, request), reply.statusCode);
  });
}

/** Sends an operation's answer through Fastify (the pipeline's headers are added on the way out). */
export function sendAnswer(reply: FastifyReply, answer: Answer): FastifyReply {
  return reply.code(answer.status).headers(answer.headers).send(answer.body);
}
