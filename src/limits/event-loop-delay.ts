import { performance } from 'node:perf_hooks';

/**
 * Watches how late a timer fires: the time the event loop spent on something else, which is
 * what every queued request waits on top of its own work (the measure @fastify/under-pressure
 * sheds on). Sampled often enough to see a delay of `maxDelayMs`: past it the process is
 * overloaded until a sample comes in on time again. A stalled loop runs this timer before it
 * reads the requests that queued meanwhile, so those already see the verdict.
 */
export class EventLoopDelay {
  readonly maxDelayMs: number;
  /** The last sample's delay, in ms. */
  delayMs = 0;
  /** Whether the last sample was later than maxDelayMs. */
  overloaded = false;
  readonly #timer: NodeJS.Timeout;

  constructor(maxDelayMs: number) {
    this.maxDelayMs = maxDelayMs;
    const intervalMs = Math.min(100, Math.max(5, Math.floor(maxDelayMs / 4)));
    let due = performance.now() + intervalMs;
    this.#timer = setInterval(() => {
      const now = performance.now();
      this.delayMs = Math.max(0, now - due);
      this.overloaded = this.delayMs > maxDelayMs;
      due = now + intervalMs;
    }, intervalMs).unref();
  }

  close(): void {
    clearInterval(this.#timer);
  }
}
