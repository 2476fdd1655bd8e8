import { ApiError } from '../errors.js';
import type { EventLoopDelay } from '../limits/event-loop-delay.js';
import type { RateDecision, RateLimiter } from '../limits/rate-limiter.js';
import type { RequestContext } from './context.js';
import { memoryRule, UNDECIDED, type Rule, type Verdict } from './pipeline.js';

/** The liveness check answers whatever the load: a busy process is alive, and must not be restarted for it. */
function isLiveness(url: string): boolean {
  return url === '/healthz' || url.startsWith('/healthz?');
}

/**
 * While the event loop runs later than MAX_EVENT_LOOP_DELAY_MS, every request but the liveness
 * check is 503 at once, before authentication (which may wait on the store): a quick refusal
 * instead of a latency that grows with the queue. /readyz is refused too, so a load balancer
 * sends the traffic elsewhere until the loop catches up (decisions 2.2, 7.7).
 */
export function overloaded(delay: Pick<EventLoopDelay, 'overloaded'>): Rule {
  return memoryRule('event-loop overload', (ctx) =>
    delay.overloaded && !isLiveness(ctx.url)
      ? new ApiError('service_unavailable', 'The service is overloaded; retry shortly.', { 'retry-after': '1' })
      : undefined,
  );
}

/**
 * Requests per API key per minute (RATE_LIMIT_PER_MINUTE), after authentication: every answer to
 * a key carries RateLimit-Policy and RateLimit, and past the limit it is 429 with Retry-After,
 * the seconds to the window's reset (the RateLimit header's t). Decided from memory while the
 * process holds an allowance of the key (or has no Redis); otherwise the request waits for one
 * step to Redis, which the fast lane leaves to Fastify (decisions 7.10).
 */
export function rateLimit(limiter: RateLimiter): Rule {
  const settle = (ctx: RequestContext, decision: RateDecision): Verdict => {
    ctx.answerHeaders['ratelimit-policy'] = limiter.policyHeader;
    ctx.answerHeaders.ratelimit = limiter.rateLimitHeader(decision);
    if (decision.admitted) return undefined;
    const retryAfter = String(decision.resetSeconds);
    return new ApiError('rate_limited', `This API key has made its ${limiter.limit} requests of this minute; retry in ${retryAfter} s.`, { 'retry-after': retryAfter });
  };
  return {
    name: 'rate limit',
    now(ctx) {
      if (ctx.principal === null) return undefined;
      const decision = limiter.takeNow(ctx.principal.keyId);
      return decision ? settle(ctx, decision) : UNDECIDED;
    },
    async check(ctx) {
      if (ctx.principal === null) return undefined;
      return settle(ctx, await limiter.take(ctx.principal.keyId));
    },
  };
}

/**
 * Takes `count` more requests of the key that made `ctx` (a batch counts as many as it has
 * changes, the pipeline took its first: decisions 5.12), all or none: the RateLimit header then
 * says what is left after them. When they do not fit, 429 with Retry-After, and the header says
 * what is left as it was, since nothing more was taken.
 */
export async function takeMore(limiter: RateLimiter, ctx: RequestContext, count: number): Promise<ApiError | undefined> {
  const principal = ctx.principal;
  if (principal === null || count <= 0) return undefined;
  const decision = await limiter.take(principal.keyId, count);
  ctx.answerHeaders.ratelimit = limiter.rateLimitHeader(decision);
  if (decision.admitted) return undefined;
  const retryAfter = String(decision.resetSeconds);
  const total = count + 1;
  const never = total > limiter.limit ? ` It never fits: this API key may make ${limiter.limit} requests a minute; send smaller batches.` : '';
  return new ApiError(
    'rate_limited',
    `This batch counts as ${total} requests and this API key has ${decision.remaining + 1} left this minute, this one included; nothing changed. Retry in ${retryAfter} s.${never}`,
    { 'retry-after': retryAfter },
  );
}
