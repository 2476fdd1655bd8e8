/** What the client's HTTP calls go through: a Request in, a Response out (globalThis.fetch fits). */
export type FetchLike = (request: Request) => Promise<Response>;

export interface RetryOptions {
  /** Retries after the first attempt (default 3); 0 never retries. */
  max?: number;
  /** The first back-off in ms, doubled on each retry (default 200). */
  baseDelayMs?: number;
  /** The longest wait between two attempts in ms, Retry-After included (default 10000). */
  maxDelayMs?: number;
  /** How to wait (`signal`, when given, ends the wait early); tests inject one that records the delays and returns at once. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** A number in [0, 1) for the jitter; tests inject a fixed one. */
  random?: () => number;
}

export type RetryPolicy = Required<RetryOptions>;

export function retryPolicy(options: number | RetryOptions | undefined): RetryPolicy {
  const o = typeof options === 'number' ? { max: options } : (options ?? {});
  return {
    max: o.max ?? 3,
    baseDelayMs: o.baseDelayMs ?? 200,
    maxDelayMs: o.maxDelayMs ?? 10_000,
    sleep: o.sleep ?? wait,
    random: o.random ?? Math.random,
  };
}

/** Resolves after `ms`, or as soon as `signal` aborts: an ended follower leaves no timer behind to hold the process. */
function wait(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** GET and HEAD change nothing and the service applies an Idempotency-Key once; a PATCH without one could apply twice. */
export function safeToRepeat(request: Request): boolean {
  return request.method === 'GET' || request.method === 'HEAD' || request.headers.has('idempotency-key');
}

/** Retry-After when given, else doubling back-off half of which is random (clients spread out, never at 0 ms); at most maxDelayMs. */
export function retryDelay(policy: RetryPolicy, retry: number, retryAfter: string | null): number {
  const asked = retryAfterMs(retryAfter);
  if (asked !== undefined) return Math.min(asked, policy.maxDelayMs);
  const backoff = Math.min(policy.baseDelayMs * 2 ** retry, policy.maxDelayMs);
  return Math.round(backoff / 2 + (backoff / 2) * policy.random());
}

/** Retry-After in ms, as delay-seconds or an HTTP-date; undefined when absent or unreadable. */
function retryAfterMs(value: string | null): number | undefined {
  if (value === null) return undefined;
  if (/^\s*\d+\s*$/.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

/** Retries what is safe to repeat after a network error (fetch's TypeError; an abort is not one) or a 503, policy.max times at most. */
export function retryingFetch(fetch: FetchLike, policy: RetryPolicy): FetchLike {
  return async (request) => {
    const retries = safeToRepeat(request) ? policy.max : 0;
    for (let retry = 0; ; retry++) {
      const last = retry >= retries;
      // A body can be read once: every attempt but the last sends a copy, the last the original.
      const attempt = last ? request : request.clone();
      let response: Response;
      try {
        response = await fetch(attempt);
      } catch (error) {
        if (last || !(error instanceof TypeError)) throw error;
        await policy.sleep(retryDelay(policy, retry, null));
        continue;
      }
      if (last || response.status !== 503) return response;
      const delay = retryDelay(policy, retry, response.headers.get('retry-after'));
      // Read to the end so the connection goes back to the pool instead of hanging on to it.
      await response.arrayBuffer().catch(() => undefined);
      await policy.sleep(delay);
    }
  };
}
