import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { Principal, Scope } from '../domain/api-key.js';

/** Who may make a request: anyone (health, the document), any valid key (a path or method that does not exist), or a key holding this scope. */
export type Access = 'public' | 'key' | Scope;

/** One request as the pipeline sees it, in either lane; made once per request, when it arrives. */
export interface RequestContext {
  readonly requestId: string;
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  /** The connection (its socket) the request came on: what a rule may remember from one request to the next on it. */
  readonly connection: object;
  /** The request's HTTP version, as in "1.1". */
  readonly httpVersion: string;
  /** The client's address, through the proxies TRUST_PROXY trusts. */
  readonly clientAddress: string;
  readonly access: Access;
  /**
   * What the request is, for metrics: the operationId of its route, or one of OTHER_OPERATIONS.
   * Always a word of the code's, never anything the client chose.
   */
  operation: string;
  /** performance.now() at arrival, for the request's log line and its duration in the metrics. */
  readonly startedAt: number;
  /** The key that authenticated the request; null until the authentication rule passes, and on public routes. */
  principal: Principal | null;
  /** Headers the rules add to whatever the request is answered with, refusals included; names in lower case. */
  readonly answerHeaders: Record<string, string>;
  /** How many rules have passed: a request the fast lane leaves to Fastify resumes at the next one, so no rule runs twice. */
  passed: number;
  /** Set once the request's last line is written (completed or aborted), so it is written and counted once. */
  finished: boolean;
}

/** The operation label of requests that are not an operation of the API. */
export const OTHER_OPERATIONS = ['health', 'ready', 'not_found', 'method_not_allowed', 'undecodable_url', 'cors_preflight', 'docs', 'dashboard', 'other'] as const;
export type OtherOperation = (typeof OTHER_OPERATIONS)[number];

const SANE_REQUEST_ID = /^[A-Za-z0-9._:@-]{1,128}$/;

/** The client's X-Request-Id when it is short and printable, else a new UUID; answers and log lines carry it. */
export function requestIdFor(req: IncomingMessage): string {
  const given = req.headers['x-request-id'];
  return typeof given === 'string' && SANE_REQUEST_ID.test(given) ? given : randomUUID();
}
