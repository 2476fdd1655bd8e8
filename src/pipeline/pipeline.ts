import type { IncomingMessage } from 'node:http';
import { performance } from 'node:perf_hooks';
import { ApiError, asApiError, StoreUnavailableError } from '../errors.js';
import { errorAnswer, type Answer } from '../operations/answer.js';
import { requestIdFor, type Access, type RequestContext } from './context.js';

/** Decided from memory alone that it cannot decide: the fast lane leaves the request to Fastify, which runs `check`. */
export const UNDECIDED = Symbol('undecided');

/** A rule's decision: undefined lets the request on, an ApiError refuses it with that error, an Answer answers it at once (a CORS preflight). */
export type Verdict = ApiError | Answer | undefined;

/**
 * One rule that applies before an operation, such as authentication. Both forms decide alike;
 * a rule has its effects (a failure counted, a header added) only where it decides.
 */
export interface Rule {
  readonly name: string;
  /** From memory alone, for the fast lane: a verdict, or UNDECIDED (and no effect) when only `check` can tell. */
  now(ctx: RequestContext): Verdict | typeof UNDECIDED;
  /** The full check, waiting on the store if it must; rejects when it cannot decide (the store is down, say). */
  check(ctx: RequestContext): Promise<Verdict>;
}

/** A rule that always decides from memory: one function serves both forms. */
export function memoryRule(name: string, decide: (ctx: RequestContext) => Verdict): Rule {
  return { name, now: decide, check: async (ctx) => decide(ctx) };
}

/** On every answer: a browser must not sniff JSON into something else. */
export const NOSNIFF = 'nosniff';
/**
 * On every answer, with nosniff (decisions 6.1): nothing of the service may be framed, leak the URL
 * it was called from, or be loaded by another site as a script or image (CORS calls are not
 * affected: Cross-Origin-Resource-Policy applies to no-cors loads only).
 */
export const SECURITY_HEADERS: readonly (readonly [name: string, value: string])[] = [
  ['x-frame-options', 'DENY'],
  ['referrer-policy', 'no-referrer'],
  ['cross-origin-resource-policy', 'same-origin'],
];
/** The policy of an answer without one of its own: JSON loads nothing and is framed nowhere; an HTML page sets its own. */
export const JSON_CONTENT_SECURITY_POLICY = "default-src 'none'; frame-ancestors 'none'";
/** The status counted for a request whose client left before sending all of it: nothing was answered (nginx's 499). */
export const CLIENT_CLOSED_STATUS = 499;

/** What the metrics see of each request; each call is O(1) and allocates nothing, as it runs for every request of both lanes. */
export interface RequestObserver {
  /** A request answered with `status` (or CLIENT_CLOSED_STATUS) after `seconds`; `operation` is the context's. */
  completed(operation: string, status: number, seconds: number): void;
  /** A 429 rate_limited refusal; `reason` is a label made from the refusing rule's name, or `operation` when the operation refused. */
  rateLimited(reason: string): void;
}
/** Authenticated answers without a cache policy of their own: stock is per-store data, no shared cache may keep it. */
export const PRIVATE_CACHE_CONTROL = 'private, no-cache';

/** Where the pipeline's lines go: the app's logger (pino), as its three levels take a line. */
export interface PipelineLog {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

export interface PipelineOptions {
  /** The client's address of a request (TRUST_PROXY applied). */
  clientAddress: (req: IncomingMessage) => string;
  log: PipelineLog;
  /** Whether each request's arrival and completion are logged (LOG_LEVEL info and below). */
  logRequests: boolean;
  /** Counts every request; absent when metrics are off, and then nothing is measured. */
  observer?: RequestObserver;
}

/**
 * Everything that applies before and around an operation, defined once and executed by both
 * lanes: Fastify's hooks (src/http/fastify-pipeline.ts) and the fast lane (src/http/fast-lane.ts).
 * A request gets its context (request id, client address) and its "incoming request" line when it
 * arrives; then the rules run in order; every answer, success or Error, leaves with the headers
 * of `addAnswerHeaders`; failures are mapped and logged by `failure`; the last line is `completed`.
 */
export class RequestPipeline {
  readonly rules: readonly Rule[];
  readonly #options: PipelineOptions;
  readonly #contexts = new WeakMap<IncomingMessage, RequestContext>();
  /** The metrics label of each rule's refusals, made once. */
  readonly #ruleLabels: readonly string[];
  /** Whether a request's arrival time is taken: for its log line or its duration. */
  readonly #timed: boolean;

  constructor(rules: readonly Rule[], options: PipelineOptions) {
    this.rules = rules;
    this.#options = options;
    this.#ruleLabels = rules.map((rule) => ruleLabel(rule.name));
    this.#timed = options.logRequests || options.observer !== undefined;
  }

  /** The request id Fastify gives a request: the one its context holds, if the fast lane made it. */
  requestIdOf(req: IncomingMessage): string {
    return this.#contexts.get(req)?.requestId ?? requestIdFor(req);
  }

  /** The request's context: the one the fast lane handed over, or a new one. */
  contextOf(req: IncomingMessage, access: Access, requestId?: string, operation?: string): RequestContext {
    return this.#contexts.get(req) ?? this.begin(req, access, requestId, operation);
  }

  /** A new context for a request that just arrived, and its "incoming request" line; `operation` labels it in the metrics. */
  begin(req: IncomingMessage, access: Access, requestId = requestIdFor(req), operation = 'other'): RequestContext {
    const ctx: RequestContext = {
      requestId,
      method: req.method ?? '',
      url: req.url ?? '',
      headers: req.headers,
      connection: req.socket,
      httpVersion: req.httpVersion,
      clientAddress: this.#options.clientAddress(req),
      access,
      operation,
      // Only the completion line and the metrics use it.
      startedAt: this.#timed ? performance.now() : 0,
      principal: null,
      answerHeaders: {},
      passed: 0,
      finished: false,
    };
    if (this.#options.logRequests) {
      const view = { method: ctx.method, url: ctx.url, host: req.headers.host, remoteAddress: ctx.clientAddress, remotePort: req.socket.remotePort };
      this.#options.log.info({ requestId: ctx.requestId, req: view }, 'incoming request');
    }
    return ctx;
  }

  /** Leaves a request the fast lane began to Fastify, which goes on with this context (contextOf, requestIdOf). */
  handOver(req: IncomingMessage, ctx: RequestContext): void {
    this.#contexts.set(req, ctx);
  }

  /** The rules not yet passed, from memory alone: the first refusal, undefined when all pass, or UNDECIDED. */
  runNow(ctx: RequestContext): Verdict | typeof UNDECIDED {
    for (; ctx.passed < this.rules.length; ctx.passed++) {
      const verdict = this.rules[ctx.passed]!.now(ctx);
      if (verdict !== undefined) return verdict;
    }
    return undefined;
  }

  /** The rules not yet passed, waiting where they must: the first refusal, or undefined when all pass. */
  async run(ctx: RequestContext): Promise<Verdict> {
    for (; ctx.passed < this.rules.length; ctx.passed++) {
      const verdict = await this.rules[ctx.passed]!.check(ctx);
      if (verdict !== undefined) return verdict;
    }
    return undefined;
  }

  /**
   * The headers every answer carries, beyond its own, given to `set` one by one (no object is
   * made on the way: this runs for every answer). `own` reads the answer's own header. A rule's
   * header never replaces the answer's own, except that Vary lists both.
   */
  addAnswerHeaders(ctx: RequestContext, own: (name: string) => string | undefined, set: (name: string, value: string) => void): void {
    for (const name in ctx.answerHeaders) {
      const value = ctx.answerHeaders[name]!;
      const mine = own(name);
      if (mine === undefined) set(name, value);
      else if (name === 'vary') set(name, `${mine}, ${value}`);
    }
    set('x-request-id', ctx.requestId);
    set('x-content-type-options', NOSNIFF);
    for (const [name, value] of SECURITY_HEADERS) set(name, value);
    if (own('content-security-policy') === undefined) set('content-security-policy', JSON_CONTENT_SECURITY_POLICY);
    if (ctx.principal && own('cache-control') === undefined) set('cache-control', PRIVATE_CACHE_CONTROL);
  }

  /** What a rule's verdict is answered with: its refusal through `failure`, or the answer it gave. */
  answerFor(ctx: RequestContext, verdict: ApiError | Answer): Answer {
    return verdict instanceof ApiError ? this.failure(ctx, verdict) : verdict;
  }

  /**
   * The Error answer for any failure: an ApiError as it is, a store outage as 503, anything else a
   * generic 500. Logged by what the operator should do about it: a client that left mid-request is
   * `info` (nothing to fix here); a store outage is one `warn` line with its cause and no stack (an
   * outage fails every request: a stack each would bury the logs); the service's own 503 refusals
   * (shutting down, not ready) are logged where they are decided; any other 5xx is an `error` with its stack.
   */
  failure(ctx: RequestContext, err: unknown): Answer {
    if (isClientAbort(err)) {
      this.aborted(ctx);
      return errorAnswer(new ApiError('bad_request', 'The client closed the connection before the request was complete.'));
    }
    const apiError = asApiError(err);
    if (apiError.code === 'rate_limited' && this.#options.observer) {
      this.#options.observer.rateLimited(ctx.passed < this.rules.length ? this.#ruleLabels[ctx.passed]! : 'operation');
    }
    if (err instanceof StoreUnavailableError) {
      this.#options.log.warn({ requestId: ctx.requestId, cause: err.message }, 'store unavailable');
    } else if (apiError.status >= 500 && !(err instanceof ApiError && apiError.status === 503)) {
      this.#options.log.error({ requestId: ctx.requestId, err }, 'request failed');
    }
    return errorAnswer(apiError);
  }

  /** The request's last log line, once its answer is sent, with the key's id once authenticated (never the key). */
  completed(ctx: RequestContext, statusCode: number): void {
    if (ctx.finished) return;
    ctx.finished = true;
    if (!this.#timed) return;
    // One clock read serves both the metric and the log line.
    const responseTime = performance.now() - ctx.startedAt;
    this.#options.observer?.completed(ctx.operation, statusCode, responseTime / 1000);
    if (this.#options.logRequests) {
      if (ctx.principal) this.#options.log.info({ requestId: ctx.requestId, keyId: ctx.principal.keyId, res: { statusCode }, responseTime }, 'request completed');
      else this.#options.log.info({ requestId: ctx.requestId, res: { statusCode }, responseTime }, 'request completed');
    }
  }

  /** The last line of a request whose client closed the connection before sending all of it: nobody is left to answer. */
  aborted(ctx: RequestContext): void {
    if (ctx.finished) return;
    ctx.finished = true;
    if (this.#options.observer) this.#options.observer.completed(ctx.operation, CLIENT_CLOSED_STATUS, (performance.now() - ctx.startedAt) / 1000);
    this.#options.log.info({ requestId: ctx.requestId, ...(ctx.principal && { keyId: ctx.principal.keyId }) }, 'client closed the connection before the request was complete');
  }
}

/** Node's error for a request whose connection closed before its body was complete (in Fastify's body reader, or the lane's). */
function isClientAbort(err: unknown): boolean {
  return err instanceof Error && (err as NodeJS.ErrnoException).code === 'ECONNRESET' && err.message === 'aborted';
}

/** A rule's name as a metrics label value: "failed-authentication throttle" -> failed_authentication_throttle. */
function ruleLabel(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9]+/g, '_').replace(/^_|_$/g, '');
}
