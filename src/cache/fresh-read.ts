import { StoreTimeoutError, within } from '../store/deadline.js';

/**
 * Shares one read among callers without ever answering a caller with a read that began before
 * it asked. At most one read is in flight; callers that arrive meanwhile wait for the next one,
 * which starts when the current one ends and serves all of them.
 *
 * Why: each GET must see every write acknowledged before it arrived (through any instance), so
 * it needs a read of the store version that starts after it. On PostgreSQL that read is a round
 * trip; under load, one round trip now serves every GET that arrived during the previous one.
 *
 * With `timeoutMs`, a caller that has to wait for the read in flight before its own can start
 * waits at most that long in all, counted from its call: a stuck read in flight must not add its
 * own timeout to the next one's. (A read that starts at once is bounded by the store itself.)
 */
export class FreshRead<T> {
  readonly #read: () => Promise<T>;
  readonly #gather: boolean;
  readonly #timeoutMs: number | undefined;
  #inFlight: Promise<T> | undefined;
  #next: Promise<T> | undefined;

  /**
   * `gather`: a read with nothing in flight waits for the end of this turn of the event loop,
   * so the requests parsed in the same turn share it (for a store whose reads are synchronous,
   * where no read is ever in flight for long).
   * `timeoutMs`: the longest a caller waits behind a read in flight, its own read included.
   */
  constructor(read: () => Promise<T>, options: { gather?: boolean; timeoutMs?: number } = {}) {
    this.#read = read;
    this.#gather = options.gather ?? false;
    this.#timeoutMs = options.timeoutMs;
  }

  get(): Promise<T> {
    if (this.#next) return this.#next;
    if (!this.#inFlight && this.#gather) {
      this.#next = new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.#start());
      return this.#next;
    }
    if (!this.#inFlight) return this.#start();
    // The read in flight may have begun before this call: wait for the one after it.
    let abandoned = false;
    const startNext = () => (abandoned ? Promise.reject(new Error('abandoned')) : this.#start());
    const chained = this.#inFlight.then(startNext, startNext);
    const timeoutMs = this.#timeoutMs;
    const next =
      timeoutMs === undefined
        ? chained
        : within(
            chained,
            timeoutMs,
            () => new StoreTimeoutError('the shared read', timeoutMs),
            () => {
              // Everyone waiting has been answered: no read for them once the stuck one ends; later callers wait anew.
              abandoned = true;
              if (this.#next === next) this.#next = undefined;
            },
          );
    this.#next = next;
    return next;
  }

  #start(): Promise<T> {
    this.#next = undefined;
    const read = this.#read().finally(() => {
      if (this.#inFlight === read) this.#inFlight = undefined;
    });
    this.#inFlight = read;
    return read;
  }
}
