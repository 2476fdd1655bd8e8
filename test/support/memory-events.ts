import type { InventoryEvent } from '../../src/domain/event.js';
import { eventCountOf, type TypeCount } from '../../src/store/event-count.js';
import type { EventCount, EventPage, Events } from '../../src/store/store.js';

/**
 * An event log in memory with the Events port's contract, for tests of what reads the log (the
 * hub, the streams) apart from any backend: append and prune by hand, count the reads.
 */
export class MemoryEvents implements Events {
  readonly #log: InventoryEvent[] = [];
  readonly #listeners = new Set<() => void>();
  #next = 1;
  /** Seqs at or below this were pruned. */
  #prunedThrough = 0;
  /** How many times readEvents was called. */
  reads = 0;
  /** How many times countEvents was called. */
  counts = 0;

  /** Appends one event for `petId` (quantity `quantity`), optionally without telling the listeners (another instance's change). */
  append(petId: bigint, quantity: number, options: { hint?: boolean; skip?: number } = {}): InventoryEvent {
    this.#next += options.skip ?? 0;
    const event: InventoryEvent = {
      seq: this.#next++,
      type: 'inventory.updated',
      occurredAt: new Date(),
      petId,
      status: 'available',
      previousQuantity: 0,
      quantity,
      version: 2,
      reason: null,
      source: 'api',
      keyId: null,
      requestId: null,
    };
    this.#log.push(event);
    if (options.hint ?? true) for (const listener of this.#listeners) listener();
    return event;
  }

  /** Drops every event up to `seq`. */
  pruneThrough(seq: number): void {
    this.#prunedThrough = Math.max(this.#prunedThrough, seq);
    while (this.#log.length > 0 && this.#log[0]!.seq <= seq) this.#log.shift();
  }

  async readEvents(after: number, limit: number): Promise<EventPage> {
    this.reads++;
    const head = this.#next - 1;
    if (after < this.#prunedThrough) return { items: [], head, pruned: true };
    return { items: this.#log.filter((e) => e.seq > after).slice(0, limit), head, pruned: false };
  }

  async countEvents(after: number, limit: number): Promise<EventCount> {
    this.counts++;
    const counted = this.#log.filter((e) => e.seq > after).slice(0, limit);
    return eventCountOf(after, this.#next - 1, counted.map((e): TypeCount => [e.type, 1, e.seq]));
  }

  async head(): Promise<number> {
    return this.#next - 1;
  }

  onAppended(listener: () => void): () => void {
    const own = () => listener();
    this.#listeners.add(own);
    return () => this.#listeners.delete(own);
  }

  /** How many listeners are registered (the hub stops listening when it stops following). */
  get listeners(): number {
    return this.#listeners.size;
  }

  async purgeEvents(): Promise<number> {
    return 0;
  }
}
