import type { Authenticator } from '../auth/authenticator.js';
import type { FailureThrottle } from '../auth/throttle.js';
import { hasScope, type Principal } from '../domain/api-key.js';
import { ApiError } from '../errors.js';
import type { EventLoopDelay } from '../limits/event-loop-delay.js';
import type { RateLimiter } from '../limits/rate-limiter.js';
import type { RequestContext } from './context.js';
import { cors } from './cors.js';
import { overloaded, rateLimit } from './limit-rules.js';
import { memoryRule, UNDECIDED, type Rule, type Verdict } from './pipeline.js';

export interface StandardRuleDeps {
  /** True once the server has begun to shut down. */
  isClosing: () => boolean;
  throttle: FailureThrottle;
  authenticator: Authenticator;
  /** CORS_ORIGINS: with any, the CORS rule comes first. */
  corsOrigins?: readonly string[];
  /** The event-loop delay to shed on (503 past MAX_EVENT_LOOP_DELAY_MS); absent when that is off. */
  loopDelay?: Pick<EventLoopDelay, 'overloaded'>;
  /** The per-key rate limit; absent when RATE_LIMIT_PER_MINUTE is 0. */
  rateLimiter?: RateLimiter;
}

/**
 * The rules every request goes through, in this order, in both lanes. Authentication comes before
 * anything that reads the path's details or the body, so a request without a valid key gets 401
 * whatever else is wrong with it. A new cross-cutting rule (a rate limit per key, say) goes into
 * this list, and both lanes apply it.
 */
export function standardRules({ isClosing, throttle, authenticator, loopDelay, rateLimiter, corsOrigins = [] }: StandardRuleDeps): Rule[] {
  return [
    // First, so its headers go on every answer, the later rules' refusals included; a preflight needs no key (decisions 2.2).
    ...(corsOrigins.length > 0 ? [cors(corsOrigins)] : []),
    shuttingDown(isClosing),
    ...(loopDelay ? [overloaded(loopDelay)] : []),
    failedAuthThrottle(throttle),
    authentication(authenticator, throttle),
    // Right after authentication, so every answer to a key (a 403 too) carries the RateLimit headers.
    ...(rateLimiter ? [rateLimit(rateLimiter)] : []),
    scope(),
    httpFraming(),
  ];
}

/** While the server shuts down, every request is 503 and its connection closed, so clients retry elsewhere. */
export function shuttingDown(isClosing: () => boolean): Rule {
  return memoryRule('shutting down', () =>
    isClosing()
      ? new ApiError('service_unavailable', 'The service is shutting down; retry on another instance.', { 'retry-after': '1', connection: 'close' })
      : undefined,
  );
}

/** An address with too many failed authentications in its minute is refused (429) until the minute ends, even with a good key. */
function failedAuthThrottle(throttle: FailureThrottle): Rule {
  return memoryRule('failed-authentication throttle', (ctx) => {
    if (ctx.access === 'public') return undefined;
    const retryAfter = throttle.retryAfter(ctx.clientAddress);
    if (retryAfter === 0) return undefined;
    return new ApiError('rate_limited', `Too many failed authentications from this address; retry in ${retryAfter} s.`, { 'retry-after': String(retryAfter) });
  });
}

/** A bearer key that is known, usable and of this environment; each 401 counts as a failure of the client's address. */
function authentication(authenticator: Authenticator, throttle: FailureThrottle): Rule {
  const settle = (ctx: RequestContext, result: Principal | ApiError): Verdict => {
    if (result instanceof ApiError) {
      if (result.code === 'unauthorized') throttle.recordFailure(ctx.clientAddress);
      return result;
    }
    ctx.principal = result;
    return undefined;
  };
  return {
    name: 'authentication',
    now(ctx) {
      if (ctx.access === 'public') return undefined;
      const result = authenticator.authenticateFromCache(ctx.headers.authorization, ctx.connection);
      return result === undefined ? UNDECIDED : settle(ctx, result);
    },
    async check(ctx) {
      if (ctx.access === 'public') return undefined;
      return settle(ctx, await authenticator.authenticate(ctx.headers.authorization, ctx.connection));
    },
  };
}

/** The one expectation HTTP defines (RFC 9110 10.1.1); Node writes its 100 Continue itself. */
const CONTINUE = /^100-continue$/i;

/**
 * What Node would refuse on its own, without the Error body and before authentication: an HTTP/1.1
 * request without Host (RFC 9112 3.2) is 400, an expectation other than 100-continue is 417.
 */
function httpFraming(): Rule {
  return memoryRule('HTTP framing', (ctx) => {
    if (ctx.httpVersion !== '1.1') return undefined;
    if (ctx.headers.host === undefined) return new ApiError('bad_request', 'An HTTP/1.1 request must carry a Host header.');
    const expect = ctx.headers.expect;
    if (expect !== undefined && !CONTINUE.test(expect)) {
      return new ApiError('expectation_failed', 'The only expectation this service meets is "Expect: 100-continue".');
    }
    return undefined;
  });
}

/** The key holds the scope the operation needs (inventory:write implies inventory:read), else 403. */
function scope(): Rule {
  return memoryRule('scope', (ctx) => {
    if (ctx.access === 'public' || ctx.access === 'key') return undefined;
    if (ctx.principal && hasScope(ctx.principal.scopes, ctx.access)) return undefined;
    return new ApiError('forbidden', `This API key lacks the ${ctx.access} scope that this operation needs.`);
  });
}
