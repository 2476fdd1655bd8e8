import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../errors.js';
import { errorAnswer } from '../operations/answer.js';
import { OPERATIONS } from '../operations/index.js';
import { validationToApiError, type AcceptedInput } from '../operations/validation.js';
import type { RequestPipeline } from '../pipeline/pipeline.js';
import { contextOf, sendAnswer } from './fastify-pipeline.js';

/** The answer to an unknown path names every operation, from the one list, so a new one shows up by itself. */
export const NOT_FOUND_MESSAGE = `No resource at this path. The API lives under /v1: ${OPERATIONS.map((op) => `${op.method} ${op.path}`).join(', ')}.`;

/** Fastify's own errors, by code, and what the API answers instead: every error is the Error object. */
const FRAMEWORK_ERRORS: Record<string, (bodyLimit: number) => ApiError> = {
  FST_ERR_CTP_BODY_TOO_LARGE: (bodyLimit) =>
    new ApiError('payload_too_large', `The request body exceeds the limit of ${bodyLimit} bytes.`),
  FST_ERR_CTP_INVALID_MEDIA_TYPE: () => new ApiError('unsupported_media_type'),
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: () => new ApiError('invalid_body', 'Content-Length does not match the body.'),
  FST_ERR_CTP_EMPTY_JSON_BODY: () => new ApiError('missing_field', 'The request body is empty; send a JSON object.'),
  FST_ERR_CTP_INVALID_JSON_BODY: () => new ApiError('malformed_json'),
  // QUERY (RFC 10008) without Content-Type, on a path without a route of its own (elsewhere 405 comes first).
  FST_ERR_ROUTE_MISSING_CONTENT_TYPE: () => new ApiError('unsupported_media_type', 'A QUERY request must send Content-Type.'),
};

/** A route not built from an operation: it declares no query parameters and no body. */
const NOTHING_ACCEPTED: AcceptedInput = { query: {}, bodyFields: [], requiredBodyFields: [] };

declare module 'fastify' {
  interface FastifyContextConfig {
    /** What the route's query and body accept, named in validation messages. */
    accepted?: AcceptedInput;
  }
}

/**
 * Every error leaves as the spec's Error object, through the pipeline's failure mapping (the
 * fast lane's too): Fastify's own errors mapped to their codes first.
 */
export function registerErrorHandling(app: FastifyInstance, pipeline: RequestPipeline, bodyLimit: number): void {
  app.setErrorHandler((err: FastifyError, request, reply) =>
    sendAnswer(reply, pipeline.failure(contextOf(pipeline, request), fromFramework(err, request, bodyLimit))),
  );
  app.setNotFoundHandler((_request, reply) => sendAnswer(reply, errorAnswer(new ApiError('not_found', NOT_FOUND_MESSAGE))));
}

/**
 * A URL Fastify's router cannot decode (Fastify's frameworkErrors, where no hook runs): the
 * pipeline first (authentication before anything else), then a bad petId under /v1/inventory/ is
 * 400, anything else no such resource; sent with the pipeline's headers, as every answer is.
 */
export function answerUndecodableUrl(pipeline: RequestPipeline, request: FastifyRequest, reply: FastifyReply): void {
  const ctx = contextOf(pipeline, request, 'undecodable_url');
  const badUrl = request.url.startsWith('/v1/inventory/') ? new ApiError('invalid_pet_id') : new ApiError('not_found', NOT_FOUND_MESSAGE);
  void pipeline
    .run(ctx)
    .then(
      (verdict) => pipeline.answerFor(ctx, verdict ?? badUrl),
      (err: unknown) => pipeline.failure(ctx, err),
    )
    .then((answer) => {
      pipeline.addAnswerHeaders(ctx, (name) => answer.headers[name], (name, value) => {
        reply.header(name, value);
      });
      void sendAnswer(reply, answer);
      pipeline.completed(ctx, answer.status);
    });
}

/** A Fastify error as the ApiError it means; any other error as it is. */
function fromFramework(err: FastifyError, request: FastifyRequest, bodyLimit: number): unknown {
  if (err instanceof ApiError) return err;
  if (err.validation) {
    return validationToApiError(err.validation, err.validationContext, request.body, request.routeOptions.config.accepted ?? NOTHING_ACCEPTED);
  }
  const mapped = err.code ? FRAMEWORK_ERRORS[err.code] : undefined;
  // A route may take a larger body than BODY_LIMIT (the batch's): the limit named is the route's.
  if (mapped) return mapped(request.routeOptions.bodyLimit ?? bodyLimit);
  // JSON.parse failures surface as SyntaxError with status 400 from some Fastify paths.
  if (err instanceof SyntaxError) return new ApiError('malformed_json');
  return err;
}
