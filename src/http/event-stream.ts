import type { ServerResponse } from 'node:http';
import { eventJson, type InventoryEvent } from '../domain/event.js';
import { EVENT_PAGE, type EventHub, type EventSubscriber } from '../cache/event-hub.js';
import type { Events } from '../store/store.js';

/** A comment line this often keeps proxies and load balancers from closing an idle stream. */
export const HEARTBEAT_MS = 15_000;
/**
 * Bytes a stream may have waiting to be written to its client. Past it while live, the reader is
 * too slow for the changes and is cut off: it reconnects with Last-Event-ID and replays from the
 * log, which costs the server nothing to hold, instead of growing this process's memory.
 */
export const MAX_BUFFERED_BYTES = 1024 * 1024;
/** During a replay, a stream waits for its client to take what was written before it reads the next page; this long at most. */
export const REPLAY_STALL_MS = 30_000;
/** What an EventSource waits before it reconnects, sent once at the start: after a shutdown, soon, and to another instance. */
const RETRY_MS = 1000;

export interface EventStreamOptions {
  heartbeatMs?: number;
  maxBufferedBytes?: number;
  onError?: (err: unknown) => void;
}

/**
 * One Server-Sent Events stream to one client: it replays the log from its start position page
 * by page, joins the hub once it has caught up with it, and from then on writes what the hub
 * fans out. Each event is written once, in seq order (`position` only grows), so a client that
 * reconnects with the last id it saw gets every later event exactly once.
 */
export class EventStream implements EventSubscriber {
  position: number;
  readonly #res: ServerResponse;
  readonly #hub: EventHub;
  readonly #events: Pick<Events, 'readEvents'>;
  readonly #options: EventStreamOptions;
  readonly #heartbeat: NodeJS.Timeout;
  #ended = false;
  readonly #closed: Promise<void>;

  /** Writes the stream's headers at once; `start` is the seq it follows from. */
  constructor(res: ServerResponse, headers: (string | number)[], start: number, deps: { hub: EventHub; events: Pick<Events, 'readEvents'> }, options: EventStreamOptions = {}) {
    this.position = start;
    this.#res = res;
    this.#hub = deps.hub;
    this.#events = deps.events;
    this.#options = options;
    this.#closed = new Promise((done) => res.once('close', done));
    res.once('close', () => this.#stop());
    // The stream ends its connection with it: a client reconnects on a fresh one (to any instance).
    res.shouldKeepAlive = false;
    res.writeHead(200, headers);
    this.#write(`retry: ${RETRY_MS}\n\n`);
    this.#heartbeat = setInterval(() => this.#write(': keep-alive\n\n'), options.heartbeatMs ?? HEARTBEAT_MS);
    this.#heartbeat.unref();
  }

  /** Resolves when the client's connection is gone, whoever ended it. */
  get closed(): Promise<void> {
    return this.#closed;
  }

  /** Whether the stream is still open. */
  get open(): boolean {
    return !this.#ended;
  }

  /** Replays the log from the start position, then joins the hub; a failure of the store ends the stream (the client reconnects). */
  async follow(): Promise<void> {
    try {
      await this.#replay();
    } catch (err) {
      this.#options.onError?.(err);
      this.end();
    }
  }

  async #replay(): Promise<void> {
    for (;;) {
      if (this.#ended) return;
      const page = await this.#events.readEvents(this.position, EVENT_PAGE);
      if (this.#ended) return;
      // Pruned, or beyond the head (the store was rebuilt): either way the client reloads and follows from the head.
      if (page.pruned || this.position > page.head) {
        this.reset(page.head);
        continue;
      }
      this.#deliver(page.items);
      if (page.items.length === EVENT_PAGE) {
        if (!(await this.#drained())) return this.cut();
        continue;
      }
      // Caught up with the log as of that read; join the hub if it is not ahead (checked and joined in one turn).
      // Else read again: the hub moved on meanwhile, or stopped (its last stream left) and must start anew.
      await this.#hub.ready();
      if (this.#ended) return;
      const hubPosition = this.#hub.position;
      if (hubPosition !== undefined && hubPosition <= this.position) {
        this.#hub.join(this);
        return;
      }
    }
  }

  deliver(events: readonly InventoryEvent[]): void {
    this.#deliver(events);
    if (this.#res.writableLength > (this.#options.maxBufferedBytes ?? MAX_BUFFERED_BYTES)) this.cut();
  }

  /** Writes the events above the position, in one write. */
  #deliver(events: readonly InventoryEvent[]): void {
    if (this.#ended) return;
    let text = '';
    for (const event of events) {
      if (event.seq <= this.position) continue;
      text += frameOf(event);
      this.position = event.seq;
    }
    if (text !== '') this.#write(text);
  }

  /** The position asked for was pruned, or is beyond the head: the client must reload the list; the stream goes on from the head. */
  reset(head: number): void {
    if (this.#ended) return;
    this.#write(`event: reset\ndata: {"head":${head}}\n\n`);
    this.position = head;
  }

  /** Ends the stream cleanly (shutdown, store failure): the client sees the end and reconnects. */
  end(): void {
    if (this.#ended) return;
    this.#stop();
    this.#res.end();
  }

  /** Cuts off a client too slow to read what it is sent: whatever waits is dropped with the connection. */
  cut(): void {
    if (this.#ended) return;
    this.#stop();
    this.#res.destroy();
  }

  #stop(): void {
    if (this.#ended) return;
    this.#ended = true;
    clearInterval(this.#heartbeat);
    this.#hub.leave(this);
  }

  #write(text: string): void {
    this.#res.write(text);
  }

  /** Whether the client took what was written (at once when the socket wants no drain), within REPLAY_STALL_MS. */
  #drained(): Promise<boolean> {
    if (!this.#res.writableNeedDrain || this.#ended) return Promise.resolve(!this.#ended);
    return new Promise((done) => {
      const finish = (ok: boolean) => {
        clearTimeout(timer);
        this.#res.off('drain', onDrain);
        this.#res.off('close', onClose);
        done(ok);
      };
      const onDrain = () => finish(true);
      const onClose = () => finish(false);
      const timer = setTimeout(() => finish(false), REPLAY_STALL_MS);
      this.#res.on('drain', onDrain);
      this.#res.on('close', onClose);
    });
  }
}

/** Each event's SSE frame, made once: the hub hands the same event objects to every stream. */
const frames = new WeakMap<InventoryEvent, string>();

function frameOf(event: InventoryEvent): string {
  let frame = frames.get(event);
  if (frame === undefined) frames.set(event, (frame = `id: ${event.seq}\nevent: ${event.type}\ndata: ${eventJson(event)}\n\n`));
  return frame;
}
