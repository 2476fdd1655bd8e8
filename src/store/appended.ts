import type { ChangeBatchResult, ChangeResult } from '../domain/inventory.js';
import { StoreUnavailableError } from '../errors.js';

/**
 * The listeners of Events.onAppended in one store, told after a commit that appended events. A
 * listener is only told to read sooner: one that throws is ignored, so a faulty listener never
 * fails the write that told it (the write has committed already).
 */
export class AppendedSignal {
  readonly #listeners = new Set<() => void>();
  readonly #listening: ((listened: boolean) => void) | undefined;
  #closed = false;

  /** `listening` is told when the first listener comes (true) and the last one goes (false). */
  constructor(listening?: (listened: boolean) => void) {
    this.#listening = listening;
  }

  /** Adds a listener; returns the function that removes it. Throws StoreUnavailableError once the store is closed. */
  on(listener: () => void): () => void {
    if (this.#closed) throw new StoreUnavailableError('the store is closed');
    // A wrapper per call: the same function added twice is two subscriptions, each stopped on its own.
    const call = () => listener();
    this.#listeners.add(call);
    if (this.#listeners.size === 1) this.#listening?.(true);
    return () => {
      if (this.#listeners.delete(call) && this.#listeners.size === 0 && !this.#closed) this.#listening?.(false);
    };
  }

  /** Tells every listener, on a later turn of the event loop (after the caller's own continuation). */
  emit(): void {
    if (this.#listeners.size === 0) return;
    setImmediate(() => {
      for (const listener of [...this.#listeners]) {
        try {
          listener();
        } catch {
          // A hint only: the listener's failure is its own.
        }
      }
    });
  }

  /** Removes every listener and refuses new ones. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    const listened = this.#listeners.size > 0;
    this.#listeners.clear();
    if (listened) this.#listening?.(false);
  }
}

/** Whether one result of a batch appended an event: a change applied, not replayed (the Changes rule). */
export function appendsEvent(result: object): result is Extract<ChangeResult, { kind: 'updated' }> {
  return 'kind' in result && result.kind === 'updated' && 'replayed' in result && !result.replayed;
}

/** Whether a committed batch of changes appended any event. */
export function batchAppended(results: readonly (ChangeResult | Error)[]): boolean {
  return results.some(appendsEvent);
}

/** Whether a ChangeBatch appended events: applied, not replayed, with at least one change. */
export function batchAppendedEvents(result: ChangeBatchResult): boolean {
  return result.kind === 'applied' && !result.replayed && result.entries.length > 0;
}
