const WINDOW_MS = 60_000;
const MAX_TRACKED = 100_000;

/**
 * Counts failed authentications per client address in fixed one-minute windows (PD 2.7).
 * An address over the limit is refused until its window ends, whatever key it sends next.
 */
export class FailureThrottle {
  readonly #limit: number;
  readonly #windows = new Map<string, { failures: number; resetAt: number }>();
  /** No address is refused from this time on (the latest window end of any address over the limit). */
  #quietFrom = 0;

  constructor(limitPerMinute: number) {
    this.#limit = limitPerMinute;
  }

  /** Seconds until `address` may try again, or 0 when it is not throttled. */
  retryAfter(address: string, nowMs = Date.now()): number {
    const w = this.#windows.get(address);
    if (!w || w.resetAt <= nowMs) return 0;
    return w.failures >= this.#limit ? Math.ceil((w.resetAt - nowMs) / 1000) : 0;
  }

  /** True when no address is refused now: a request need not know its address to pass. */
  quiet(nowMs = Date.now()): boolean {
    return nowMs >= this.#quietFrom;
  }

  recordFailure(address: string, nowMs = Date.now()): void {
    const w = this.#windows.get(address);
    if (w && w.resetAt > nowMs) {
      w.failures += 1;
      if (w.failures >= this.#limit) this.#quietFrom = Math.max(this.#quietFrom, w.resetAt);
      return;
    }
    if (this.#windows.size >= MAX_TRACKED) this.#sweep(nowMs);
    this.#windows.set(address, { failures: 1, resetAt: nowMs + WINDOW_MS });
    if (this.#limit <= 1) this.#quietFrom = Math.max(this.#quietFrom, nowMs + WINDOW_MS);
  }

  #sweep(nowMs: number): void {
    for (const [address, w] of this.#windows) if (w.resetAt <= nowMs) this.#windows.delete(address);
    // Still full of live windows (an attack from many addresses): start over rather than grow.
    if (this.#windows.size >= MAX_TRACKED) this.#windows.clear();
  }
}
