import { performance } from 'node:perf_hooks';
import { StoreUnavailableError } from '../errors.js';

/**
 * The longest a request waits on the store by default (STORE_TIMEOUT_MS), counted from when it
 * began to wait: for a connection, for a shared read, for its batch, and for the query itself.
 */
export const DEFAULT_STORE_TIMEOUT_MS = 5000;

/** The clock of every store deadline: monotonic, so a wall-clock step never stretches or cuts a wait. */
export const clock = (): number => performance.now();

/** The store did not answer within the time a request may wait for it: answered as 503 like any outage. */
export class StoreTimeoutError extends StoreUnavailableError {
  /** `what`: what was waited for, as the log shows it (the client sees the usual 503). */
  constructor(what: string, timeoutMs: number) {
    super(`${what} did not finish within ${Math.round(timeoutMs)} ms`);
    this.name = 'StoreTimeoutError';
  }
}

/**
 * `promise`, or a StoreTimeoutError once `waitMs` have passed, whichever comes first. `onLate` runs
 * when the wait ended first, to give back what the promise still holds (a pooled connection, say).
 */
export function within<T>(promise: Promise<T>, waitMs: number, timeout: () => StoreTimeoutError, onLate?: () => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(timeout());
      onLate?.();
    }, Math.max(0, waitMs));
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (err: Error) => {
        clearTimeout(timer);
        reject(err);
      },
    );
  });
}
