/**
 * How many webhook sends the whole process may start in one turn of the event loop (decisions
 * 10.14). A turn first handles every I/O that is ready (the API's requests among it), then the
 * sends this budget grants; the rest wait for the next turn. With no request waiting, turns are
 * short and deliveries go as fast as receivers answer; under a load of requests, each turn is long
 * with their work and the deliveries take only their few sends of it: a burst of deliveries never
 * holds up the API's answers, and the API never stops them.
 */
export class TurnBudget {
  readonly #perTurn: number;
  #granted = 0;
  #waiting: (() => void)[] = [];
  #scheduled = false;

  constructor(perTurn: number) {
    this.#perTurn = perTurn;
  }

  /** How many of `wanted` sends may start now (0 to wanted); once it grants fewer, `then` runs in the next turn. */
  grant(wanted: number, then: () => void): number {
    const granted = Math.min(wanted, this.#perTurn - this.#granted);
    this.#granted += granted;
    this.#schedule();
    if (granted < wanted) this.#waiting.push(then);
    return granted;
  }

  /** setImmediate runs after the turn's I/O: the budget is whole again there, and whoever waited goes on. */
  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      this.#granted = 0;
      const waiting = this.#waiting;
      this.#waiting = [];
      for (const then of waiting) then();
    });
  }
}

/** Sends the process starts per turn at most: a turn of sends costs well under a millisecond, so idle deliveries are not slowed. */
export const SENDS_PER_TURN = 8;
