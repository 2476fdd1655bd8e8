import type { Authenticator } from '../auth/authenticator.js';
import type { FailureThrottle } from '../auth/throttle.js';
import { hasScope, type Principal } from '../domain/api-key.js';
import { ApiError } from '../errors.js';
import type { RequestContext } from './context.js';
import { memoryRule, UNDECIDED, type Rule, type Verdict } from './pipeline.js';

export interface StandardRuleDeps {
  /** True once the server has begun to shut down. */
  isClosing: () => boolean;
  throttle: FailureThrottle;
  authenticator: Authenticator;
}

/**
 * The rules every request goes through, in this order, in both lanes. Authentication comes before
 * anything that reads the path's details or the body, so a request without a valid key gets 401
 * whatever else is wrong with it. A new cross-cutting rule (a rate limit per key, say) goes into
 * this list, and both lanes apply it.
 */
export function standardRules({ isClosing, throttle, authenticator }: StandardRuleDeps): Rule[] {
  return [shuttingDown(isClosing), failedAuthThrottle(throttle), authentication(authenticator, throttle), scope()];
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
      const result = authenticator.authenticateFromCache(ctx.headers.authorization);
      return result === undefined ? UNDECIDED : settle(ctx, result);
    },
    async check(ctx) {
      if (ctx.access === 'public') return undefined;
      return settle(ctx, await authenticator.authenticate(ctx.headers.authorization));
    },
  };
}

/** The key holds the scope the operation needs (inventory:write implies inventory:read), else 403. */
function scope(): Rule {
  return memoryRule('scope', (ctx) => {
    if (ctx.access === 'public' || ctx.access === 'key') return undefined;
    if (ctx.principal && hasScope(ctx.principal.scopes, ctx.access)) return undefined;
    return new ApiError('forbidden', `This API key lacks the ${ctx.access} scope that this operation needs.`);
  });
}
