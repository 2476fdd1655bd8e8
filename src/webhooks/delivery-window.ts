import type { RetryingEvent } from '../domain/webhook.js';
import type { WebhookMessage } from './messages.js';

/** One event of the window, from its read to its delivery. */
export interface WindowItem {
  readonly message: WebhookMessage;
  state: 'waiting' | 'sending' | 'delivered';
  /** Failed attempts in a row. */
  failures: number;
  /** Not sent again before this (ms since the epoch): its retry's wait. */
  retryAt: number;
}

/** An endpoint's place as the store keeps it (WebhookDeliveries.recordProgress). */
export interface WindowPosition {
  deliveredSeq: number;
  deliveredAbove: number[];
  retrying: RetryingEvent[];
}

/**
 * The events an endpoint's worker has read and not yet seen delivered, in seq order, and the rule
 * of what may go (decisions 10.4): the events of one pet in seq order, one at a time; an event
 * that names no pet (or, with `strict`, every event) waits for everything before it and holds back
 * everything after it until it is delivered. Its place: every event up to `deliveredSeq` delivered,
 * and those delivered above it.
 */
export class DeliveryWindow {
  /** Undelivered events and the delivered ones after the first of them, ascending by seq. */
  readonly #items: WindowItem[] = [];
  /** Every event up to it delivered. */
  #floor: number;
  /** The last seq read from the log (or passed over by a reset). */
  #readUpTo: number;
  /** Delivered above the floor before this worker started (the store's place), not read again yet. */
  readonly #deliveredBefore: Set<number>;
  /** Retries recorded before this worker started, by seq, not read again yet. */
  readonly #retryingBefore: Map<number, RetryingEvent>;
  #undelivered = 0;

  constructor(position: WindowPosition) {
    this.#floor = position.deliveredSeq;
    this.#readUpTo = position.deliveredSeq;
    this.#deliveredBefore = new Set(position.deliveredAbove.filter((seq) => seq > position.deliveredSeq));
    this.#retryingBefore = new Map(position.retrying.map((r) => [r.seq, r]));
  }

  /** The seq the next read starts after. */
  get readUpTo(): number {
    return this.#readUpTo;
  }

  /** Events read and not delivered yet (in flight included). */
  get size(): number {
    return this.#undelivered;
  }

  /** Takes an event read from the log (above readUpTo); one the store has as delivered is not sent again. */
  add(message: WebhookMessage): void {
    this.#readUpTo = message.seq;
    if (this.#deliveredBefore.delete(message.seq)) {
      // Delivered before a crash or a takeover: only a place to hold, so the floor can pass it.
      if (this.#items.length === 0) this.#floor = message.seq;
      else this.#items.push({ message, state: 'delivered', failures: 0, retryAt: 0 });
      return;
    }
    const retry = this.#retryingBefore.get(message.seq);
    this.#retryingBefore.delete(message.seq);
    this.#items.push({ message, state: 'waiting', failures: retry?.failures ?? 0, retryAt: retry?.at.getTime() ?? 0 });
    this.#undelivered++;
  }

  /** A reset past pruned events: sent alone, after everything before it; once delivered the place is `message.seq` (the head it names). */
  addReset(message: WebhookMessage): void {
    this.#readUpTo = Math.max(this.#readUpTo, message.seq);
    this.#deliveredBefore.clear();
    this.#retryingBefore.clear();
    this.#items.push({ message, state: 'waiting', failures: 0, retryAt: 0 });
    this.#undelivered++;
  }

  /**
   * The events that may be sent now, in seq order, at most `slots`; and when the first one held
   * back only by its retry's wait comes due (Infinity: none).
   */
  ready(now: number, slots: number, strict: boolean): { items: WindowItem[]; dueAt: number } {
    const items: WindowItem[] = [];
    let dueAt = Infinity;
    const heldPets = new Set<bigint>();
    let before = false;
    for (const item of this.#items) {
      if (items.length >= slots) break;
      if (item.state === 'delivered') continue;
      const pets = strict ? undefined : item.message.pets;
      const free = pets === undefined ? !before : pets.every((pet) => !heldPets.has(pet));
      if (free && item.state === 'waiting') {
        if (item.retryAt <= now) items.push(item);
        else dueAt = Math.min(dueAt, item.retryAt);
      }
      before = true;
      if (pets === undefined) break;
      for (const pet of pets) heldPets.add(pet);
    }
    return { items, dueAt };
  }

  /** Marks an event delivered and moves the floor past every delivered one at the front. */
  delivered(item: WindowItem): void {
    if (item.state === 'delivered') return;
    item.state = 'delivered';
    item.failures = 0;
    this.#undelivered--;
    let front = 0;
    while (front < this.#items.length && this.#items[front]!.state === 'delivered') front++;
    if (front === 0) return;
    this.#floor = front === this.#items.length ? this.#readUpTo : this.#items[front]!.message.seq - 1;
    this.#items.splice(0, front);
  }

  /** The place to record: the floor, what was delivered above it, and the events waiting for a retry. */
  position(): WindowPosition {
    const deliveredAbove: number[] = [];
    const retrying: RetryingEvent[] = [];
    for (const item of this.#items) {
      if (item.state === 'delivered') deliveredAbove.push(item.message.seq);
      else if (item.failures > 0) retrying.push({ seq: item.message.seq, failures: item.failures, at: new Date(item.retryAt) });
    }
    // What the store had above the part read again stays recorded.
    for (const seq of this.#deliveredBefore) if (seq > this.#floor) deliveredAbove.push(seq);
    for (const r of this.#retryingBefore.values()) if (r.seq > this.#floor) retrying.push(r);
    deliveredAbove.sort((a, b) => a - b);
    return { deliveredSeq: this.#floor, deliveredAbove, retrying };
  }
}
