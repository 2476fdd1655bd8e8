/**
 * How many webhook sends the whole process may start, shared by its endpoints' workers (decisions
 * 10.14), so that a burst of deliveries never holds up the API's answers:
 *
 * - per turn of the event loop, at most `perTurn`: a turn first handles every I/O that is ready
 *   (the API's requests among it), then the sends granted; the rest wait for the next turn;
 * - while the API is answering requests (`busy`), also at most `perSecondWhenBusy`: with the store
 *   on another process (PostgreSQL), a request's turns are short, spent waiting for its answer,
 *   and a per-turn bound alone would let deliveries fill the core between them.
 *
 * With no request under way, deliveries go as fast as receivers answer.
 */
export class TurnBudget {
  readonly #perTurn: number;
  readonly #busy: () => boolean;
  readonly #perMs: number;
  #granted = 0;
  /** Sends that may start while busy, refilled at perSecondWhenBusy up to perTurn. */
  #tokens: number;
  #refilledAt = performance.now();
  #waiting: (() => void)[] = [];
  #scheduled = false;

  constructor(perTurn: number, options: { busy?: () => boolean; perSecondWhenBusy?: number } = {}) {
    this.#perTurn = perTurn;
    this.#busy = options.busy ?? (() => false);
    this.#perMs = (options.perSecondWhenBusy ?? Infinity) / 1000;
    this.#tokens = perTurn;
  }

  /** How many of `wanted` sends may start now (0 to wanted); once it grants fewer, `then` runs when more may. */
  grant(wanted: number, then: () => void): number {
    let allowed = this.#perTurn - this.#granted;
    const busy = Number.isFinite(this.#perMs) && this.#busy();
    if (busy) {
      const now = performance.now();
      this.#tokens = Math.min(this.#perTurn, this.#tokens + (now - this.#refilledAt) * this.#perMs);
      this.#refilledAt = now;
      allowed = Math.min(allowed, Math.floor(this.#tokens));
    }
    const granted = Math.max(0, Math.min(wanted, allowed));
    this.#granted += granted;
    if (busy) this.#tokens -= granted;
    if (granted < wanted) this.#waiting.push(then);
    this.#schedule(busy && granted < wanted && this.#granted < this.#perTurn);
    return granted;
  }

  /**
   * The budget is whole again after the turn's I/O (setImmediate), and whoever waited goes on; when
   * it is the rate that held them back, once the next send may start (a timer: a loop of immediates
   * would keep the core busy for nothing).
   */
  #schedule(byRate: boolean): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    const wake = () => {
      this.#scheduled = false;
      this.#granted = 0;
      const waiting = this.#waiting;
      this.#waiting = [];
      for (const then of waiting) then();
    };
    // Node's timers count whole milliseconds from a loop time that may be up to one behind: one more, so the token is there.
    if (byRate) setTimeout(wake, Math.ceil((1 - this.#tokens) / this.#perMs) + 1).unref();
    else setImmediate(wake);
  }
}

/** Sends the process starts per turn at most: a turn of sends costs well under a millisecond, so idle deliveries are not slowed. */
export const SENDS_PER_TURN = 8;
/** Sends a second at most while the API answers requests: some 8% of a core at ~80 µs a send, and far above a store's pace of changes. */
export const SENDS_PER_SECOND_WHEN_BUSY = 1000;
