import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { FastifyBaseLogger } from 'fastify';
import type { FastifySchemaValidationError } from 'fastify/types/schema.js';
import { TypeBoxValidatorCompiler } from '@fastify/type-provider-typebox';
import type { Authenticator } from '../auth/authenticator.js';
import type { FailureThrottle } from '../auth/throttle.js';
import type { ListCache } from '../cache/list-cache.js';
import { hasScope, type Principal, type Scope } from '../domain/api-key.js';
import { tryParsePetId } from '../domain/pet-id.js';
import { type ApiError, asApiError } from '../errors.js';
import { itemJson } from '../cache/list-body.js';
import { type ListAnswer, listInventoryAnswer } from '../operations/list-inventory.js';
import { REPLAYED_HEADER, updateInventoryEntry } from '../operations/update-inventory.js';
import { InventoryUpdate } from '../schemas/inventory.js';
import type { InventoryStore } from '../store/store.js';
import { headerValue } from './header-value.js';
import { isPlainJsonContentType, parseJsonBody } from './json-body.js';
import { requestIdFor } from './request-id.js';
import { ERROR_CACHE_CONTROL, JSON_CONTENT_TYPE, NOSNIFF, PRIVATE_CACHE_CONTROL } from './response-headers.js';
import { validationToApiError } from './validation.js';

export interface FastLaneOptions {
  authenticator: Authenticator;
  throttle: FailureThrottle;
  listCache: ListCache;
  store: Pick<InventoryStore, 'applyChange'>;
  log: FastifyBaseLogger;
  /** Whether info lines are logged, as Fastify logs each request at info. */
  logRequests: boolean;
  /** TRUST_PROXY is set: the client's address is in forwarded headers, which only Fastify reads. */
  behindProxy: boolean;
  bodyLimit: number;
  requireIfMatch: boolean;
  isClosing: () => boolean;
}

export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => void;

/** How many requests the lane has answered since start; the rest went to Fastify (for metrics, and tests that it is used). */
export interface FastLaneStats {
  answered: number;
}

const LIST_URL = '/v1/inventory';
const ITEM_PREFIX = '/v1/inventory/';

/** The validator Fastify compiles for the PATCH body, compiled the same way, so both lanes see the same errors. */
const checkUpdate = TypeBoxValidatorCompiler({ schema: InventoryUpdate, method: 'PATCH', url: ITEM_PREFIX, httpPart: 'body' }) as (
  body: unknown,
) => { value?: unknown; error?: FastifySchemaValidationError[] };
const UPDATE_FIELDS = Object.keys(InventoryUpdate.properties);

/**
 * GET /v1/inventory and PATCH /v1/inventory/{petId}, answered on node:http before Fastify.
 *
 * Why: measured on one core, Fastify's request machinery (hooks, reply objects, schema
 * serialisation) cost several times what these operations do themselves (bench/results.md).
 *
 * The lane takes only a request whose every check before the body would pass: not shutting
 * down, its address not throttled, the exact path without a query, a cached usable key with the
 * scope, and for PATCH a plain JSON content type with a Content-Length within the limit.
 * Everything else goes to Fastify untouched, so each refusal before the body (401, 403, 404,
 * 405, 413, 415, 429, 503 ...) has one implementation. Once a PATCH body is read the lane
 * answers it, through the same parser, validator, operation code and header values as the
 * route; test/fast-lane.test.ts holds both lanes to the same answers.
 */
export function fastLane(options: FastLaneOptions, stats: FastLaneStats, fallback: RequestHandler): RequestHandler {
  const principalFor = (req: IncomingMessage, scope: Scope): Principal | undefined => {
    const principal = options.authenticator.cachedPrincipal(req.headers.authorization);
    return principal && hasScope(principal.scopes, scope) ? principal : undefined;
  };

  return (req, res) => {
    const started = performance.now();
    if (options.isClosing() || throttled(options, req)) return fallback(req, res);
    const { method, url = '' } = req;
    if (method === 'GET' && url === LIST_URL && principalFor(req, 'inventory:read')) {
      stats.answered++;
      const toFastify = () => {
        stats.answered--;
        fallback(req, res);
      };
      return void list(options, req, res, started, toFastify).catch((err: unknown) => broken(options, res, err));
    }
    if (method === 'PATCH' && url.startsWith(ITEM_PREFIX)) {
      const petId = tryParsePetId(url.slice(ITEM_PREFIX.length));
      const principal = petId === undefined ? undefined : principalFor(req, 'inventory:write');
      if (principal && petId !== undefined && hasPlainBody(req, options.bodyLimit)) {
        stats.answered++;
        return update(options, req, res, { petId, principal, started });
      }
    }
    fallback(req, res);
  };
}

/** Whether the request's address may be refused (429): then Fastify answers it. Behind a proxy, when any address is. */
function throttled({ throttle, behindProxy }: FastLaneOptions, req: IncomingMessage): boolean {
  const address = req.socket.remoteAddress;
  return behindProxy || address === undefined ? !throttle.quiet() : throttle.retryAfter(address) > 0;
}

/** A JSON body framed by a Content-Length from 1 to the limit; Fastify handles the rest (chunked, empty, too large, other types). */
function hasPlainBody(req: IncomingMessage, bodyLimit: number): boolean {
  const length = req.headers['content-length'];
  return (
    isPlainJsonContentType(req.headers['content-type']) &&
    req.headers['transfer-encoding'] === undefined &&
    length !== undefined &&
    /^[1-9]\d{0,9}$/.test(length) &&
    Number(length) <= bodyLimit
  );
}

async function list(options: FastLaneOptions, req: IncomingMessage, res: ServerResponse, started: number, fallback: () => void): Promise<void> {
  let answer: ListAnswer;
  let body: Buffer | undefined;
  try {
    answer = listInventoryAnswer(await options.listCache.current(), headerValue(req, 'accept-encoding'), headerValue(req, 'if-none-match'));
    body = answer.status === 200 ? await answer.body : undefined;
  } catch {
    // Nothing is sent yet: Fastify tries again and answers (and logs) the failure as for any request.
    return fallback();
  }
  const requestId = logIncoming(options, req);
  const headers: OutgoingHttpHeaders = {
    'x-request-id': requestId,
    vary: 'Accept-Encoding',
    etag: answer.etag,
    'x-content-type-options': NOSNIFF,
    'cache-control': PRIVATE_CACHE_CONTROL,
  };
  if (answer.status === 200) {
    headers['content-type'] = JSON_CONTENT_TYPE;
    if (answer.encoding) headers['content-encoding'] = answer.encoding;
    headers['content-length'] = body!.length;
  }
  res.writeHead(answer.status, headers);
  res.end(body);
  logCompleted(options, requestId, res, started);
}

function update(
  options: FastLaneOptions,
  req: IncomingMessage,
  res: ServerResponse,
  target: { petId: bigint; principal: Principal; started: number },
): void {
  const requestId = logIncoming(options, req);
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  // A client that goes away mid-body has nobody to answer; Node closes the socket.
  req.on('error', () => {});
  req.on('end', () => {
    answerUpdate(options, req, requestId, target, Buffer.concat(chunks).toString('utf8'))
      .then(({ status, headers, body }) => {
        res.writeHead(status, { ...headers, 'x-request-id': requestId, 'content-type': JSON_CONTENT_TYPE, 'x-content-type-options': NOSNIFF, 'content-length': Buffer.byteLength(body) });
        res.end(body);
        logCompleted(options, requestId, res, target.started);
      })
      .catch((err: unknown) => broken(options, res, err, requestId));
  });
}

async function answerUpdate(
  options: FastLaneOptions,
  req: IncomingMessage,
  requestId: string,
  { petId, principal }: { petId: bigint; principal: Principal },
  text: string,
): Promise<{ status: number; headers: Record<string, string>; body: string }> {
  try {
    const body = parseJsonBody(req.headers['content-type'], text);
    const checked = checkUpdate(body);
    if (checked.error) throw validationToApiError(checked.error, 'body', body, UPDATE_FIELDS);
    const answer = await updateInventoryEntry(
      options.store,
      { petId, body: body as InventoryUpdate, ifMatch: headerValue(req, 'if-match'), idempotencyKey: headerValue(req, 'idempotency-key'), principal, requestId },
      { requireIfMatch: options.requireIfMatch },
    );
    return {
      status: 200,
      headers: { ...(answer.replayed ? REPLAYED_HEADER : {}), etag: answer.etag, 'cache-control': PRIVATE_CACHE_CONTROL },
      body: itemJson(answer.item),
    };
  } catch (err) {
    const apiError: ApiError = asApiError(err);
    if (apiError.status >= 500) options.log.error({ requestId, err }, 'request failed');
    return { status: apiError.status, headers: { ...apiError.headers, 'cache-control': ERROR_CACHE_CONTROL }, body: JSON.stringify(apiError.toBody()) };
  }
}

/** A failure of the lane itself, after it took the request: never expected, logged, and the connection dropped. */
function broken({ log }: FastLaneOptions, res: ServerResponse, err: unknown, requestId?: string): void {
  log.error({ requestId, err }, 'fast lane could not answer');
  res.destroy();
}

/** The request id, and Fastify's "incoming request" line (same fields, through its serialisers) when info is logged. */
function logIncoming({ log, logRequests }: FastLaneOptions, req: IncomingMessage): string {
  const requestId = requestIdFor(req);
  if (logRequests) {
    const view = { method: req.method, url: req.url, headers: req.headers, host: req.headers.host, ip: req.socket.remoteAddress, socket: req.socket };
    log.info({ requestId, req: view }, 'incoming request');
  }
  return requestId;
}

function logCompleted({ log, logRequests }: FastLaneOptions, requestId: string, res: ServerResponse, started: number): void {
  if (logRequests) log.info({ requestId, res, responseTime: performance.now() - started }, 'request completed');
}
