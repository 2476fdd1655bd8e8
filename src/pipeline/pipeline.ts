import type { IncomingMessage } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { FastifyBaseLogger } from 'fastify';
import { asApiError, type ApiError } from '../errors.js';
import { errorAnswer, type Answer } from '../operations/answer.js';
import type { Access, RequestContext } from './context.js';
import { requestIdFor } from './request-id.js';

/** Decided from memory alone that it cannot decide: the fast lane leaves the request to Fastify, which runs `check`. */
export const UNDECIDED = Symbol('undecided');

/** A rule's decision: undefined lets the request on, an ApiError refuses it with that error. */
export type Verdict = ApiError | undefined;

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
/** Authenticated answers without a cache policy of their own: stock is per-store data, no shared cache may keep it. */
export const PRIVATE_CACHE_CONTROL = 'private, no-cache';

export interface PipelineOptions {
  /** The client's address of a request (TRUST_PROXY applied). */
  clientAddress: (req: IncomingMessage) => string;
  log: FastifyBaseLogger;
  /** Whether each request's arrival and completion are logged (LOG_LEVEL info and below). */
  logRequests: boolean;
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

  constructor(rules: readonly Rule[], options: PipelineOptions) {
    this.rules = rules;
    this.#options = options;
  }

  /** The request id Fastify gives a request: the one its context holds, if the fast lane made it. */
  requestIdOf(req: IncomingMessage): string {
    return this.#contexts.get(req)?.requestId ?? requestIdFor(req);
  }

  /** The request's context: the one the fast lane handed over, or a new one. */
  contextOf(req: IncomingMessage, access: Access, requestId?: string): RequestContext {
    return this.#contexts.get(req) ?? this.begin(req, access, requestId);
  }

  /** A new context for a request that just arrived, and its "incoming request" line. */
  begin(req: IncomingMessage, access: Access, requestId = requestIdFor(req)): RequestContext {
    const ctx: RequestContext = {
      requestId,
      method: req.method ?? '',
      url: req.url ?? '',
      headers: req.headers,
      clientAddress: this.#options.clientAddress(req),
      access,
      // Only the completion line uses it.
      startedAt: this.#options.logRequests ? performance.now() : 0,
      principal: null,
      answerHeaders: {},
      passed: 0,
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
    if (ctx.principal && own('cache-control') === undefined) set('cache-control', PRIVATE_CACHE_CONTROL);
  }

  /** The Error answer for any failure: an ApiError as it is, a store outage as 503, anything else a generic 500; 5xx are logged with their cause. */
  failure(ctx: RequestContext, err: unknown): Answer {
    const apiError = asApiError(err);
    if (apiError.status >= 500) this.#options.log.error({ requestId: ctx.requestId, err }, 'request failed');
    return errorAnswer(apiError);
  }

  /** The request's last log line, once its answer is sent. */
  completed(ctx: RequestContext, statusCode: number): void {
    if (this.#options.logRequests) {
      this.#options.log.info({ requestId: ctx.requestId, res: { statusCode }, responseTime: performance.now() - ctx.startedAt }, 'request completed');
    }
  }
}
