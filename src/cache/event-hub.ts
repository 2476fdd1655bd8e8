import type { EventType, InventoryEvent } from '../domain/event.js';
import type { Events } from '../store/store.js';

/** How often the hub reads the log when nothing hints sooner: a change on another instance reaches this one's streams within about this. */
export const EVENT_POLL_MS = 200;
/** Events per read of the log, the hub's and a stream's replay alike. */
export const EVENT_PAGE = 1000;
/** Events per count of the log, while no stream is open: a count reads no event out whole, so it can take more at once. */
export const EVENT_COUNT_PAGE = 10_000;

/** One reader the hub fans events out to (a live stream). */
export interface EventSubscriber {
  /** The last seq it has been given: the hub gives it only events above. */
  readonly position: number;
  /** The events the hub read, in order, some perhaps at or below its position (it skips those). */
  deliver(events: readonly InventoryEvent[]): void;
  /** The events after its position were pruned before the hub could read them: it goes on from `head`. */
  reset(head: number): void;
}

/** What the metrics see of the hub. */
export interface EventHubObserver {
  /** Events the hub read from the log (appended by any process or instance), and when they were fanned out to at least one stream. */
  read(events: readonly InventoryEvent[], fannedOutAt: number | undefined): void;
  /** Events the hub counted, by type, while no stream was open: they were appended, and no one was sent them. */
  counted(byType: Partial<Record<EventType, number>>): void;
}

export interface EventHubOptions {
  pollMs?: number;
  /** Called when a read of the log fails; the next poll tries again. */
  onError?: (err: unknown) => void;
  observer?: EventHubObserver;
}

/**
 * The one follower of the event log in a process: it reads the log every EVENT_POLL_MS, and
 * sooner when the store hints that events were appended (onAppended), and hands each page to
 * every live stream. So a thousand streams cost one read, and a change made through another
 * instance (which this one's store may never hint at) still arrives within a poll.
 * It listens for hints only while a stream is open: following for the metrics alone, it counts
 * at each poll, since a count after every commit cost a busy writer more than a micro-second a
 * change for a figure scraped every few seconds.
 *
 * Each read asks for the events after the last seq the hub has read (`position`); a stream joins
 * only once it has itself read the log up to at least that seq (EventStream does the replay), so
 * it misses nothing the hub fanned out before it joined, and skips what it already has.
 */
export class EventHub {
  readonly #events: Pick<Events, 'readEvents' | 'countEvents' | 'head' | 'onAppended'>;
  readonly #options: EventHubOptions;
  readonly #subscribers = new Set<EventSubscriber>();
  /** The last seq the hub read (every live subscriber has everything up to it); undefined until it follows. */
  #position: number | undefined;
  /** The newest seq, as the last read of the log saw it. */
  #head: number | undefined;
  #starting: Promise<number> | undefined;
  #timer: NodeJS.Timeout | undefined;
  #stopHint: (() => void) | undefined;
  #reading = false;
  #again = false;
  /** Keep following with no subscriber (the metrics count what the log receives). */
  #always = false;
  #closed = false;

  constructor(events: Pick<Events, 'readEvents' | 'countEvents' | 'head' | 'onAppended'>, options: EventHubOptions = {}) {
    this.#events = events;
    this.#options = options;
  }

  /** The newest seq the hub has seen, for the metrics; undefined while it has not read the log. */
  get head(): number | undefined {
    return this.#head;
  }

  /** How many live subscribers it fans out to. */
  get size(): number {
    return this.#subscribers.size;
  }

  /** Follows the log from now on even with no stream open (for the metrics). */
  followAlways(): void {
    this.#always = true;
    void this.ready().catch((err: unknown) => this.#options.onError?.(err));
  }

  /**
   * Starts following the log if it does not yet; resolves to the hub's position. Synchronously
   * after it resolves, a subscriber whose position is at least `position` may join.
   */
  ready(): Promise<number> {
    if (this.#position !== undefined) return Promise.resolve(this.#position);
    this.#starting ??= this.#events.head().then(
      (head) => {
        this.#starting = undefined;
        if (this.#position === undefined && !this.#closed) this.#follow(head);
        return this.#position ?? head;
      },
      (err: unknown) => {
        this.#starting = undefined;
        throw err;
      },
    );
    return this.#starting;
  }

  /** The hub's position: the last seq it read; undefined while it does not follow the log. */
  get position(): number | undefined {
    return this.#position;
  }

  /** Adds a live subscriber; its position must be at least the hub's (see ready). */
  join(subscriber: EventSubscriber): void {
    if (this.#position === undefined || subscriber.position < this.#position) throw new Error('a subscriber joined behind the hub');
    this.#stopHint ??= this.#events.onAppended(() => this.#wake());
    this.#subscribers.add(subscriber);
  }

  /** Removes a subscriber; with none left the hub stops reading the log (unless it follows always). */
  leave(subscriber: EventSubscriber): void {
    this.#subscribers.delete(subscriber);
    if (this.#subscribers.size > 0) return;
    if (this.#always) this.#stopHinting();
    else this.#stop();
  }

  /** Stops following for good. */
  close(): void {
    this.#closed = true;
    this.#subscribers.clear();
    this.#stop();
  }

  #follow(head: number): void {
    this.#position = head;
    this.#head = head;
    this.#timer = setInterval(() => this.#wake(), this.#options.pollMs ?? EVENT_POLL_MS).unref();
  }

  #stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.#stopHinting();
    this.#position = undefined;
  }

  #stopHinting(): void {
    this.#stopHint?.();
    this.#stopHint = undefined;
  }

  /** A read now, or right after the one under way (a hint during a read may name events it did not see). */
  #wake(): void {
    if (this.#reading) {
      this.#again = true;
      return;
    }
    void this.#read();
  }

  async #read(): Promise<void> {
    this.#reading = true;
    try {
      do {
        this.#again = false;
        await this.#readToHead();
      } while (this.#again && this.#position !== undefined);
    } catch (err) {
      this.#options.onError?.(err);
    } finally {
      this.#reading = false;
    }
  }

  async #readToHead(): Promise<void> {
    for (;;) {
      const after = this.#position;
      if (after === undefined) return;
      if (this.#subscribers.size === 0) {
        // Following for the metrics alone: they need how many of each type, which a count gives without reading each event.
        const count = await this.#events.countEvents(after, EVENT_COUNT_PAGE);
        if (this.#position !== after) return;
        // A stream joined during the count, at a position from `after` on: it must be sent these events, so read them.
        if (this.#subscribers.size > 0) continue;
        this.#head = count.head;
        this.#position = count.last;
        if (count.counted > 0) this.#options.observer?.counted(count.byType);
        if (count.counted < EVENT_COUNT_PAGE) return;
        continue;
      }
      const page = await this.#events.readEvents(after, EVENT_PAGE);
      // Stopped, or restarted from another head, while the read was under way: its page is no one's.
      if (this.#position !== after) return;
      this.#head = page.head;
      if (page.pruned) {
        this.#position = page.head;
        for (const subscriber of this.#subscribers) subscriber.reset(page.head);
        continue;
      }
      const items = page.items;
      if (items.length === 0) return;
      this.#position = items[items.length - 1]!.seq;
      for (const subscriber of [...this.#subscribers]) subscriber.deliver(items);
      this.#options.observer?.read(items, this.#subscribers.size > 0 ? Date.now() : undefined);
      if (items.length < EVENT_PAGE) return;
    }
  }
}
