import type { ServerResponse } from 'node:http';
import type { EventHub } from '../cache/event-hub.js';
import { ApiError } from '../errors.js';
import type { EventStreamPort } from '../operations/handler.js';
import type { Events } from '../store/store.js';
import type { ConnectionManager } from './connections.js';
import { EventStream, type EventStreamOptions } from './event-stream.js';

/**
 * The open event streams of the process: at most `max` (MAX_EVENT_STREAMS; 503 beyond, so a
 * flood of streams cannot exhaust memory or file descriptors), every one ended at shutdown.
 */
export class EventStreams {
  readonly #streams = new Set<EventStream>();
  readonly #max: number;
  readonly #deps: { hub: EventHub; events: Pick<Events, 'readEvents'> };
  readonly #options: EventStreamOptions;
  #closed = false;

  constructor(max: number, deps: { hub: EventHub; events: Pick<Events, 'readEvents'> }, options: EventStreamOptions = {}) {
    this.#max = max;
    this.#deps = deps;
    this.#options = options;
  }

  /** How many streams are open. */
  get size(): number {
    return this.#streams.size;
  }

  /** Refuses a new stream (503) when the process holds its most, or shuts down; call before answering anything. */
  admit(): void {
    if (this.#closed) throw shuttingDown();
    if (this.#max === 0) throw new ApiError('service_unavailable', 'Event streams are off on this instance; follow GET /v1/events instead.');
    if (this.#streams.size >= this.#max) {
      throw new ApiError('service_unavailable', `This instance holds its ${this.#max} event streams; retry shortly, or follow GET /v1/events.`, { 'retry-after': '1' });
    }
  }

  /** Opens a stream on `res` from `start` (admitted in the same turn), and follows the log with it until it closes. */
  open(res: ServerResponse, headers: (string | number)[], start: number): EventStream {
    const stream = new EventStream(res, headers, start, this.#deps, this.#options);
    this.#streams.add(stream);
    void stream.closed.then(() => this.#streams.delete(stream));
    void stream.follow();
    return stream;
  }

  /** Ends every stream cleanly and refuses new ones: the clients reconnect, to another instance. */
  close(): void {
    this.#closed = true;
    for (const stream of this.#streams) stream.end();
  }
}

/** A stream asked for while the process shuts down. */
export function shuttingDown(): ApiError {
  return new ApiError('service_unavailable', 'The service is shutting down; reconnect to another instance.', { 'retry-after': '1', connection: 'close' });
}

/**
 * The stream operation's port to `streams`, on the server's `connections`: a stream is refused
 * while they drain, and ended with them.
 */
export function eventStreamPort(streams: EventStreams, connections: Pick<ConnectionManager, 'draining' | 'streaming'>): EventStreamPort {
  return {
    admit: () => streams.admit(),
    hold: (res, headers, start) => {
      // Refused here, before any byte of the stream: its connection would be ended at once.
      if (connections.draining) throw shuttingDown();
      // Again: other streams may have opened, or the app closed, since the first admit (the head was read between).
      // From here to open nothing awaits, so the count admitted is the count opened.
      streams.admit();
      const stream = streams.open(res, headers, start);
      connections.streaming(res, () => stream.end());
      // A stream has no answer that ends by itself: its request is complete when the connection is gone.
      return stream.closed;
    },
  };
}
