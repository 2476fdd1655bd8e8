import { request as httpRequest, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';

/** One message of a Server-Sent Events stream as the client parsed it; a comment is `{ comment }`. */
export interface SseMessage {
  id?: string;
  event?: string;
  data?: string;
  retry?: string;
  comment?: string;
}

/** How long a test waits for what must come before it gives up: a deadline on waiting, never a measure of speed. */
export const STREAM_WAIT_MS = 20_000;

/**
 * A client of GET /v1/events/stream over a real socket: it parses the stream as an EventSource
 * would (RFC-less but WHATWG rules: fields per line, a blank line ends a message, `:` a comment)
 * and keeps every message, so a test can wait for the ones it expects.
 */
export class StreamClient {
  readonly messages: SseMessage[] = [];
  status = 0;
  headers: IncomingHttpHeaders = {};
  /** The body of an answer that was not a stream (an Error), once it ended. */
  text = '';
  /** Resolves when the server ended the stream or the connection closed. */
  readonly ended: Promise<'end' | 'close'>;
  readonly #response: Promise<IncomingMessage>;
  #buffer = '';
  #current: SseMessage = {};
  #res: IncomingMessage | undefined;
  #destroy: () => void;
  #waiters: (() => void)[] = [];

  constructor(baseUrl: string, options: { key?: string; query?: string; headers?: Record<string, string> } = {}) {
    const url = new URL(`/v1/events/stream${options.query ?? ''}`, baseUrl);
    const headers: Record<string, string> = { accept: 'text/event-stream', ...options.headers };
    if (options.key !== undefined) headers.authorization = `Bearer ${options.key}`;
    let settleEnd: (how: 'end' | 'close') => void = () => {};
    this.ended = new Promise((done) => (settleEnd = done));
    const req = httpRequest(url, { headers, agent: false });
    this.#destroy = () => req.destroy();
    this.#response = new Promise((resolve, reject) => {
      req.on('response', (res) => {
        this.#res = res;
        this.status = res.statusCode ?? 0;
        this.headers = res.headers;
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => this.#take(chunk));
        res.on('end', () => settleEnd('end'));
        res.on('close', () => {
          settleEnd('close');
          this.#wake();
        });
        res.on('error', () => {});
        resolve(res);
      });
      req.on('error', (err) => {
        settleEnd('close');
        this.#wake();
        reject(err);
      });
    });
    this.#response.catch(() => {});
    req.end();
  }

  /** Resolves once the answer's status and headers are in. */
  async opened(): Promise<this> {
    await this.#response;
    return this;
  }

  /** The events received (messages with an id), in order. */
  get events(): SseMessage[] {
    return this.messages.filter((m) => m.id !== undefined);
  }

  /** The seqs of the events received, in order. */
  get seqs(): number[] {
    return this.events.map((m) => Number(m.id));
  }

  /** Waits until `done` holds of what was received, or fails after STREAM_WAIT_MS (or when the stream closed first). */
  async until(done: (client: this) => boolean, what: string): Promise<void> {
    const deadline = Date.now() + STREAM_WAIT_MS;
    while (!done(this)) {
      if (this.#res?.closed || this.#res?.destroyed) throw new Error(`the stream closed before ${what}; received ${JSON.stringify(this.messages).slice(0, 2000)}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no ${what} within ${STREAM_WAIT_MS} ms; received ${JSON.stringify(this.messages).slice(0, 2000)}`);
      await new Promise<void>((wake) => {
        const timer = setTimeout(wake, Math.min(left, 250));
        this.#waiters.push(() => {
          clearTimeout(timer);
          wake();
        });
      });
    }
  }

  /** Reads the whole answer of a refused stream (an Error object). */
  async body(): Promise<string> {
    await this.opened();
    await this.ended;
    return this.text;
  }

  /** Drops the connection, as a client that goes away. */
  close(): void {
    this.#destroy();
  }

  #take(chunk: string): void {
    if (this.status !== 200) {
      this.text += chunk;
      return;
    }
    this.#buffer += chunk;
    let newline: number;
    while ((newline = this.#buffer.indexOf('\n')) >= 0) {
      const line = this.#buffer.slice(0, newline).replace(/\r$/, '');
      this.#buffer = this.#buffer.slice(newline + 1);
      this.#line(line);
    }
    this.#wake();
  }

  #line(line: string): void {
    if (line === '') {
      if (Object.keys(this.#current).length > 0) this.messages.push(this.#current);
      this.#current = {};
      return;
    }
    if (line.startsWith(':')) {
      this.messages.push({ comment: line.slice(1).trim() });
      return;
    }
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'id' || field === 'event' || field === 'retry') this.#current[field] = value;
    else if (field === 'data') this.#current.data = this.#current.data === undefined ? value : `${this.#current.data}\n${value}`;
  }

  #wake(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const wake of waiters) wake();
  }
}
