import { randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, asApiError, ERROR_CATALOGUE, StoreUnavailableError, type ErrorBody, type ErrorCode } from '../errors.js';
import { ERROR_CACHE_CONTROL } from './response-headers.js';
import { validationToApiError } from './validation.js';

export const NOT_FOUND_MESSAGE =
  'No resource at this path. The API lives under /v1: GET /v1/inventory, PATCH /v1/inventory/{petId}.';

/** Fastify's own errors, by code, and what the API answers instead (PD 4.1). */
const FRAMEWORK_ERRORS: Record<string, (bodyLimit: number) => ApiError> = {
  FST_ERR_CTP_BODY_TOO_LARGE: (bodyLimit) =>
    new ApiError('payload_too_large', `The request body exceeds the limit of ${bodyLimit} bytes.`),
  FST_ERR_CTP_INVALID_MEDIA_TYPE: () => new ApiError('unsupported_media_type'),
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: () => new ApiError('invalid_body', 'Content-Length does not match the body.'),
  FST_ERR_CTP_EMPTY_JSON_BODY: () => new ApiError('missing_field', 'The request body is empty; send a JSON object.'),
  FST_ERR_CTP_INVALID_JSON_BODY: () => new ApiError('malformed_json'),
};

/**
 * Every error leaves as the spec's Error object: ApiErrors as they are, Fastify's own mapped to
 * their codes, store outages as 503, anything else as a generic 500 with details only in the log.
 */
export function registerErrorHandling(app: FastifyInstance, bodyLimit: number): void {
  app.setErrorHandler((err: FastifyError, request, reply) => {
    const apiError = toApiError(err, request, bodyLimit);
    if (apiError.status >= 500) {
      request.log.error({ err }, 'request failed');
    }
    return sendApiError(reply, apiError);
  });

  app.setNotFoundHandler((_request, reply) => sendApiError(reply, new ApiError('not_found', NOT_FOUND_MESSAGE)));
}

/** For a path the router could not decode: a bad petId under /v1/inventory/, else no such resource. */
export function badUrlError(url: string): ApiError {
  return url.startsWith('/v1/inventory/') ? new ApiError('invalid_pet_id') : new ApiError('not_found', NOT_FOUND_MESSAGE);
}

export function sendApiError(reply: FastifyReply, error: ApiError): FastifyReply {
  reply.code(error.status).headers(error.headers).header('cache-control', ERROR_CACHE_CONTROL);
  return reply.send(error.toBody());
}

function toApiError(err: FastifyError, request: FastifyRequest, bodyLimit: number): ApiError {
  if (err instanceof ApiError || err instanceof StoreUnavailableError) return asApiError(err);
  if (err.validation) {
    const bodySchema = request.routeOptions.schema?.body as { properties?: object } | undefined;
    return validationToApiError(err.validation, err.validationContext, request.body, Object.keys(bodySchema?.properties ?? {}));
  }
  const mapped = err.code ? FRAMEWORK_ERRORS[err.code] : undefined;
  if (mapped) return mapped(bodyLimit);
  // JSON.parse failures surface as SyntaxError with status 400 from some Fastify paths.
  if (err instanceof SyntaxError) return new ApiError('malformed_json');
  return asApiError(err);
}

/** Raw HTTP for errors raised before Fastify has a request: unparseable requests and timeouts. */
export function clientErrorResponse(err: NodeJS.ErrnoException): string {
  const code: ErrorCode = err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 'request_timeout' : 'bad_request';
  const entry = ERROR_CATALOGUE[code];
  const body = JSON.stringify({ code, message: entry.message, status: entry.status } satisfies ErrorBody);
  return (
    `HTTP/1.1 ${entry.status} ${code === 'request_timeout' ? 'Request Timeout' : 'Bad Request'}\r\n` +
    'Content-Type: application/json; charset=utf-8\r\n' +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    'Cache-Control: no-store\r\n' +
    `X-Request-Id: ${randomUUID()}\r\n` +
    'Connection: close\r\n\r\n' +
    body
  );
}

export function handleClientError(err: NodeJS.ErrnoException, socket: Socket): void {
  // A reset connection has nobody to answer.
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  socket.end(clientErrorResponse(err));
}
