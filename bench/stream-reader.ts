import { request, type ClientRequest } from 'node:http';
import { performance } from 'node:perf_hooks';

/** One event as it arrived: its requestId (the X-Request-Id of the PATCH that made it) and when, on this process's clock. */
export interface Arrival {
  requestId: string | null;
  at: number;
}

/**
 * GET /v1/events/stream on a socket of its own. `opened` resolves with the answer's status once
 * its headers are in; with `onEvent`, each event's arrival is reported with performance.now()
 * taken when the bytes that completed it were read (only `data:` lines are parsed, which is all
 * the bench needs). Without it the stream is held idle and its bytes are dropped.
 */
export class StreamReader {
  readonly opened: Promise<number>;
  readonly #request: ClientRequest;
  #buffer = '';

  constructor(baseUrl: string, key: string, onEvent?: (arrival: Arrival) => void) {
    this.#request = request(new URL('/v1/events/stream', baseUrl), {
      headers: { accept: 'text/event-stream', authorization: `Bearer ${key}` },
      agent: false,
    });
    this.opened = new Promise((resolve, reject) => {
      this.#request.on('response', (res) => {
        resolve(res.statusCode ?? 0);
        res.setEncoding('utf8');
        res.on('error', () => {});
        if (res.statusCode !== 200) res.resume();
        else res.on('data', (chunk: string) => onEvent && this.#take(chunk, performance.now(), onEvent));
      });
      this.#request.on('error', reject);
    });
    this.opened.catch(() => {});
    this.#request.end();
  }

  /** Closes the connection. */
  close(): void {
    this.#request.destroy();
  }

  #take(chunk: string, at: number, onEvent: (arrival: Arrival) => void): void {
    this.#buffer += chunk;
    let end: number;
    while ((end = this.#buffer.indexOf('\n\n')) >= 0) {
      const message = this.#buffer.slice(0, end);
      this.#buffer = this.#buffer.slice(end + 2);
      const data = message.split('\n').find((line) => line.startsWith('data:'));
      if (data === undefined) continue;
      const event = JSON.parse(data.slice(5)) as { data?: { requestId?: string | null } };
      onEvent({ requestId: event.data?.requestId ?? null, at });
    }
  }
}
