import { randomBytes } from 'node:crypto';
import { eventId, eventJson, type InventoryEvent } from '../domain/event.js';
import type { Events, Relays } from '../store/store.js';
import type { NatsStream } from './nats-stream.js';
import { SUBJECT_PREFIX } from './subjects.js';

/** How long the relay's lease lasts unrenewed; renewed every third of it. The stream's duplicate window outlasts a takeover (nats-stream.ts). */
export const RELAY_LEASE_MS = 15_000;
/** How often an idle relay reads the log, when no hint comes sooner (a change made by another process). */
const POLL_MS = 250;
/** Events read, published and then recorded at a time. */
const PAGE = 100;
/** A store or NATS that failed is tried again after this. */
const RETRY_MS = 1000;

/** What the metrics see of the relay. */
export interface RelayObserver {
  /** Events the stream acked (a duplicate too). */
  published(count: number): void;
  /** Whether the last publish or connection attempt failed: NATS is out of reach. */
  outage(down: boolean): void;
}

/** Where the relay's lines go (the app's logger). */
export interface RelayLog {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

export interface RelayOptions {
  /** The relay's name on its lease and position: the stream's name. */
  name: string;
  relays: Relays;
  events: Pick<Events, 'readEvents' | 'onAppended'>;
  /** Connects to NATS and sets the stream up; called again after it failed. */
  open: () => Promise<NatsStream>;
  log: RelayLog;
  observer?: RelayObserver;
  leaseMs?: number;
  pollMs?: number;
}

/** The subject an event is published on: inventory.events.<type>. */
export function subjectOf(event: InventoryEvent): string {
  return `${SUBJECT_PREFIX}.${event.type}`;
}

/**
 * Publishes the event log to a NATS JetStream stream, in seq order, one event at a time (the next
 * only once the stream acked the one before, so the stream holds them in seq order), each with its
 * event id as Nats-Msg-Id. Every instance runs one; the one holding the relay's lease publishes,
 * the others wait to take it over. The position is recorded after the acks of each page: a crash
 * in between publishes those events again, and the stream drops them by their Nats-Msg-Id. A NATS
 * or store outage only pauses it: it resumes from the position it holds.
 */
export class EventRelay {
  /** This instance's name on the lease: random, so a restarted process is a new holder. */
  readonly holder = `rly_${randomBytes(9).toString('base64url')}`;
  readonly #options: Required<Pick<RelayOptions, 'leaseMs' | 'pollMs'>> & RelayOptions;
  #stream: NatsStream | undefined;
  /** The seq published up to, while the lease is held; undefined while it is not. */
  #position: number | undefined;
  /** What the store holds as recorded. */
  #recorded = 0;
  /** When the lease was last renewed, on performance.now(). */
  #renewedAt = -Infinity;
  #down = false;
  #closed = false;
  #woken = false;
  #wakeUp: (() => void) | undefined;
  #stopHint: (() => void) | undefined;
  #running: Promise<void> | undefined;

  constructor(options: RelayOptions) {
    this.#options = { leaseMs: RELAY_LEASE_MS, pollMs: POLL_MS, ...options };
  }

  /** Whether this instance holds the lease now. */
  get publishing(): boolean {
    return this.#position !== undefined;
  }

  /** Starts the loop: it claims the lease at once, or waits to take it over. */
  start(): void {
    if (this.#running || this.#closed) return;
    try {
      this.#stopHint = this.#options.events.onAppended(() => this.#wake());
    } catch {
      // A closed store: the loop's first lease fails and says so.
    }
    this.#running = this.#loop().catch((err: unknown) => this.#options.log.warn({ err, relay: this.#options.name }, 'event relay stopped by an error'));
  }

  /** Stops after the publish in flight, records what was published, gives the lease up and closes the connection. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#stopHint?.();
    this.#wakeUp?.();
    await this.#running;
    if (this.#position !== undefined) {
      await this.#record().catch(() => {});
      await this.#options.relays.release(this.#options.name, this.holder).catch((err: unknown) =>
        this.#options.log.warn({ err, relay: this.#options.name }, 'could not release the event relay lease; it expires by itself'),
      );
    }
    await this.#stream?.close().catch(() => {});
  }

  async #loop(): Promise<void> {
    while (!this.#closed) {
      if (!(await this.#renewIfDue())) {
        await this.#sleep(this.#position === undefined ? this.#options.leaseMs / 3 : RETRY_MS, false);
        continue;
      }
      if (!this.#stream && !(await this.#connect())) {
        await this.#sleep(RETRY_MS, false);
        continue;
      }
      this.#woken = false;
      let page;
      try {
        page = await this.#options.events.readEvents(this.#position!, PAGE);
      } catch (err) {
        this.#options.log.warn({ err, relay: this.#options.name }, 'event relay: could not read the event log; trying again');
        await this.#sleep(RETRY_MS, false);
        continue;
      }
      if (page.pruned) {
        await this.#skipPruned();
        continue;
      }
      if (page.items.length === 0) {
        // A hint that came while the log was being read is not lost.
        if (!this.#woken) await this.#sleep(this.#options.pollMs, true);
        continue;
      }
      const published = await this.#publish(page.items);
      if (!(await this.#record())) continue;
      if (!published) await this.#sleep(RETRY_MS, false);
    }
  }

  /** Publishes the events in order, each once the one before was acked; false when one failed (NATS out of reach) or the lease went stale. */
  async #publish(events: readonly InventoryEvent[]): Promise<boolean> {
    for (const event of events) {
      if (this.#closed || !(await this.#renewIfDue())) return false;
      try {
        await this.#stream!.publish(subjectOf(event), eventJson(event), eventId(event.seq));
      } catch (err) {
        this.#outage(err);
        return false;
      }
      this.#position = event.seq;
      this.#options.observer?.published(1);
      if (this.#down) {
        this.#down = false;
        this.#options.observer?.outage(false);
        this.#options.log.info({ relay: this.#options.name, seq: event.seq }, 'event relay: NATS is back; publishing resumed');
      }
    }
    return true;
  }

  #outage(err: unknown): void {
    if (this.#down) return;
    this.#down = true;
    this.#options.observer?.outage(true);
    this.#options.log.warn({ err, relay: this.#options.name, after: this.#position }, 'event relay: NATS is out of reach; publishing waits and resumes from the position it holds');
  }

  async #connect(): Promise<boolean> {
    try {
      this.#stream = await this.#options.open();
      return true;
    } catch (err) {
      this.#outage(err);
      return false;
    }
  }

  /**
   * Renews the lease when a third of it went by, or claims it. True while this instance holds a
   * lease fresh enough that it cannot have run out (so another instance that takes it over never
   * publishes beside this one); false when another holds it or the store cannot be reached.
   */
  async #renewIfDue(): Promise<boolean> {
    const { leaseMs, name } = this.#options;
    if (this.#position !== undefined && performance.now() - this.#renewedAt < leaseMs / 3) return true;
    const began = performance.now();
    let stored: number | undefined;
    try {
      stored = await this.#options.relays.lease(name, this.holder, leaseMs);
    } catch (err) {
      this.#options.log.warn({ err, relay: name }, 'event relay: could not renew its lease; trying again');
      // Two renewals missed in a row, and the lease may soon run out: publish nothing until renewed.
      return this.#position !== undefined && performance.now() - this.#renewedAt < (2 * leaseMs) / 3;
    }
    if (stored === undefined) {
      if (this.#position !== undefined) this.#options.log.info({ relay: name, holder: this.holder }, 'event relay: taken over by another instance');
      this.#position = undefined;
      return false;
    }
    if (this.#position === undefined) this.#options.log.info({ relay: name, holder: this.holder, position: stored }, 'event relay: publishing from this instance');
    this.#renewedAt = began;
    // Everything up to either was acked by the stream: this holder's own, or a holder's before it.
    this.#position = Math.max(this.#position ?? 0, stored);
    this.#recorded = Math.max(this.#recorded, stored);
    return true;
  }

  /** Records the position when it moved; false when the store refused (the lease was lost) or could not be reached. */
  async #record(): Promise<boolean> {
    const position = this.#position;
    if (position === undefined) return false;
    if (position <= this.#recorded) return true;
    try {
      if (await this.#options.relays.recordPosition(this.#options.name, this.holder, position)) {
        this.#recorded = position;
        return true;
      }
      this.#options.log.info({ relay: this.#options.name, holder: this.holder }, 'event relay: its lease was taken over; publishing stops here');
      this.#position = undefined;
    } catch (err) {
      // Kept in memory: recorded at the next page, or published again by a successor (dropped as duplicates).
      this.#options.log.warn({ err, relay: this.#options.name }, 'event relay: could not record its position; trying again');
    }
    return false;
  }

  /**
   * The events after the position were pruned before they were published (the relay was off longer
   * than the log keeps events): they are lost to the stream. It goes on from the oldest event left,
   * found by bisection (readEvents says `pruned` below the mark), and says how many it skipped.
   */
  async #skipPruned(): Promise<void> {
    let low = this.#position!;
    let high: number;
    try {
      high = (await this.#options.events.readEvents(low, 0)).head;
      while (low < high) {
        const middle = Math.floor((low + high) / 2);
        if ((await this.#options.events.readEvents(middle, 0)).pruned) low = middle + 1;
        else high = middle;
      }
    } catch (err) {
      this.#options.log.warn({ err, relay: this.#options.name }, 'event relay: could not read the event log; trying again');
      await this.#sleep(RETRY_MS, false);
      return;
    }
    this.#options.log.warn(
      { relay: this.#options.name, from: this.#position, to: low },
      'event relay: events were pruned from the log before they were published; they are missing from the stream',
    );
    this.#position = low;
    await this.#record();
  }

  #wake(): void {
    this.#woken = true;
    this.#wakeUp?.();
  }

  /** Waits `ms`, or until closed, or (`wakeable`) until a hint comes. */
  #sleep(ms: number, wakeable: boolean): Promise<void> {
    if (this.#closed) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#wakeUp = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      timer.unref();
      this.#wakeUp = wakeable
        ? done
        : () => {
            if (this.#closed) done();
          };
    });
  }
}
