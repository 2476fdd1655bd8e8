import type { IncomingHttpHeaders } from 'node:http';
import type { Principal, Scope } from '../domain/api-key.js';

/** Who may make a request: anyone (health, the document), any valid key (a path or method that does not exist), or a key holding this scope. */
export type Access = 'public' | 'key' | Scope;

/** One request as the pipeline sees it, in either lane; made once per request, when it arrives. */
export interface RequestContext {
  readonly requestId: string;
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  /** The client's address, through the proxies TRUST_PROXY trusts. */
  readonly clientAddress: string;
  readonly access: Access;
  /** performance.now() at arrival, for the request's log line. */
  readonly startedAt: number;
  /** The key that authenticated the request; null until the authentication rule passes, and on public routes. */
  principal: Principal | null;
  /** Headers the rules add to whatever the request is answered with, refusals included; names in lower case. */
  readonly answerHeaders: Record<string, string>;
  /** How many rules have passed: a request the fast lane leaves to Fastify resumes at the next one, so no rule runs twice. */
  passed: number;
}
