const WINDOW_MS = 60_000;
const MAX_TRACKED = 100_000;

/**
 * Counts failed authentications per client address in fixed one-minute windows.
 * An address over the limit is refused until its window ends, whatever key it sends next.
 */
export class FailureThrottle {
  readonly #limit: number;
  readonly #windows = new Map<string, { failures: number; resetAt: number }>();

  constructor(limitPerMinute: number) {
    this.#limit = limitPerMinute;
  }

  /** Seconds until `address` may try again, or 0 when it is not throttled. */
  retryAfter(address: string, nowMs = Date.now()): number {
    const w = this.#windows.get(address);
    if (!w || w.resetAt <= nowMs) return 0;
    return w.failures >= this.#limit ? Math.ceil((w.resetAt - nowMs) / 1000) : 0;
  }

  recordFailure(address: string, nowMs = Date.now()): void {
    const w = this.#windows.get(address);
    if (w && w.resetAt > nowMs) {
      w.failures += 1;
      return;
    }
    if (this.#windows.size >= MAX_TRACKED) this.#sweep(nowMs);
    this.#windows.set(address, { failures: 1, resetAt: nowMs + WINDOW_MS });
  }

  #sweep(nowMs: number): void {
    for (const [address, w] of this.#windows) if (w.resetAt <= nowMs) this.#windows.delete(address);
    // Still full of live windows (an attack from many addresses): start over rather than grow.
    if (this.#windows.size >= MAX_TRACKED) this.#windows.clear();
  }
}
