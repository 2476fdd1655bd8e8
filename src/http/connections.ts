import { readFileSync } from 'node:fs';
import { ServerResponse, type IncomingMessage, type Server } from 'node:http';
import { Server as NetServer, type Socket } from 'node:net';
import { ApiError } from '../errors.js';
import { rawErrorAnswer } from './raw-answer.js';
import type { RequestHandler } from './fast-lane.js';

export interface ConnectionOptions {
  /** Open connections at most; at the cap the longest-idle one is closed to admit a new one, else the new one gets 503. */
  maxConnections: number;
  /** Time a client has to send a whole request, headers and body, in ms. */
  requestTimeoutMs: number;
  /**
   * Time a request may take from its arrival to the end of its answer, in ms (the request timeout
   * plus the store's): past it the connection is closed, so a client that never reads its answers
   * cannot hold a connection, and at the cap lock out others.
   */
  answerTimeoutMs: number;
  /** What to log (a warning: the cap lowered to fit the open-file limit). */
  warn: (fields: Record<string, unknown>, message: string) => void;
}

/**
 * During a drain, a connection that sent nothing since its last answer (or since the drain began)
 * for this long is closed: a fresh one, or one just answered, gets time to send its next request.
 */
export const DRAIN_IDLE_GRACE_MS = 250;
/** How often a drain looks for connections idle past their grace. */
const DRAIN_SWEEP_MS = 25;
/**
 * The drain ends this long after its last connection closed, unless a new one opens: a client
 * whose connection an answer closed reconnects within milliseconds, and is answered (decisions 7.5).
 */
export const DRAIN_RECONNECT_GRACE_MS = 250;
/**
 * Requests one connection may have waiting behind the one being answered. HTTP/1.1 clients that
 * pipeline send a few; past this the connection is closed, since the queue is memory a client
 * could otherwise grow without reading a single answer.
 */
export const MAX_PIPELINED = 64;
/** A connection that has sent nothing for this long since it was accepted may be closed at the cap (see #evictable). */
export const FRESH_GRACE_MS = 1000;
/** File descriptors left for the store, the logs and the listener when the cap is fitted under the open-file limit. */
export const RESERVED_FILE_DESCRIPTORS = 128;

/** One open connection, as the manager follows it. */
interface Connection {
  readonly socket: Socket;
  /** The request being answered, and its response; undefined when none. */
  req: IncomingMessage | undefined;
  res: ServerResponse | undefined;
  /** When the current request's headers arrived (the manager's coarse clock). */
  startedAt: number;
  /** Requests pipelined behind the current one, as [req, res, req, res, ...], run one at a time. */
  queue: (IncomingMessage | ServerResponse)[] | undefined;
  /** When it was accepted (Date.now()), and whether an answer has ended on it: a fresh one may be sending its first request. */
  readonly openedAt: number;
  answered: boolean;
  /** When it last became idle, and how many bytes it had read then (more since: a request is arriving). */
  idleSince: number;
  bytesAtIdle: number;
  /** An answer closed it (Connection: close): nothing sent after that request is executed (RFC 9112 9.6). */
  closing: boolean;
  /** When its request timed out (0: it did not); the socket is destroyed if it lingers. */
  timedOutAt: number;
  /** An unparseable request behind the one being answered: its Error answer goes out once that one's has. */
  pendingError: NodeJS.ErrnoException | undefined;
  /** Its answer is a stream (Server-Sent Events), open as long as the client reads it; this ends it cleanly. */
  endStream: (() => void) | undefined;
}

/**
 * The connections of the node:http server, in front of both lanes: the one place that sees every
 * connection and every request before the fast lane or Fastify does.
 *
 * - Requests of one connection run one at a time, in order: a request pipelined behind a write
 *   sees it, and nothing behind an answer that closes the connection is executed.
 * - The request timeout covers the body too: Node cuts only slow headers, so a periodic sweep
 *   answers a request whose body has not arrived in time with 408 and closes its connection.
 * - At `maxConnections`, the longest-idle connection is closed to admit a new one (an answered one,
 *   or one silent for FRESH_GRACE_MS since it was accepted); with none such,
 *   the new one gets 503 and is closed. Idle connections thus never lock out a new client.
 * - `drain` closes each connection after its next answer, and each idle one once it has sent
 *   nothing for DRAIN_IDLE_GRACE_MS, until none is left or its time is up (and not before its
 *   minimum time, if any), then stops listening, and resolves once no connection is left.
 * - A stream (`streaming`) is an answer with no end of its own: no answer timeout applies to it,
 *   and a drain ends it at its start, so the drain never waits for one.
 *
 * Per request this costs a map lookup, a listener on the response and two set operations: no
 * timer, no closure and no await.
 */
export class ConnectionManager {
  /** True from the start of a drain: each answer closes its connection, and /readyz answers 503. */
  draining = false;
  /** The cap in force: the setting, fitted under the open-file limit once listening. */
  maxConnections: number;
  readonly #options: ConnectionOptions;
  readonly #open = new Map<Socket, Connection>();
  /** The connections whose request is being answered, streams excepted (see answering). */
  readonly #answering = new Set<Connection>();
  /** The idle connections, longest idle first (a Set keeps insertion order). */
  readonly #idle = new Set<Connection>();
  /** A clock read by the sweep, not per request: the timeout needs no finer grain. */
  #clock = Date.now();
  readonly #sweepEveryMs: number;
  #sweep: NodeJS.Timeout | undefined;
  #server: Server | undefined;
  #handler: RequestHandler | undefined;
  /** closeIdle has run (the app is closing): an answer that ends from now on closes its connection instead of leaving it idle. */
  #closingIdle = false;
  /** During a drain's time: told when the last connection closes and when one opens. */
  #drainWatch: { emptied: () => void; connected: () => void } | undefined;
  readonly #onFinish: (this: ServerResponse) => void;

  constructor(options: ConnectionOptions) {
    this.#options = options;
    this.maxConnections = options.maxConnections;
    this.#sweepEveryMs = Math.min(1000, Math.max(25, Math.floor(options.requestTimeoutMs / 4)));
    const finished = (res: ServerResponse) => this.#finished(res);
    // One function for every response (no closure per request); `this` is the response.
    this.#onFinish = function onFinish(this: ServerResponse) {
      finished(this);
    };
  }

  /** Follows the server's connections and serves its requests with `handler` (the fast lane, then Fastify). */
  attach(server: Server, handler: RequestHandler): void {
    this.#server = server;
    this.#handler = handler;
    server.on('request', this.handle);
    server.on('connection', (socket: Socket) => this.#connected(socket));
    // Node would answer these itself, without the Error body: they go through the pipeline like any request.
    server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => this.handle(req, res));
    server.on('connect', (req: IncomingMessage, socket: Socket) => this.#connectRequest(req, socket));
    server.on('listening', () => this.#listening());
    server.on('close', () => this.#stopSweep());
  }

  /** How many connections are open (refused ones excluded). */
  get size(): number {
    return this.#open.size;
  }

  /** How many requests are being answered now (event streams, which last as long as their clients, not counted). */
  get answering(): number {
    return this.#answering.size;
  }

  /** The server's request listener: one request at a time per connection, in order. */
  readonly handle = (req: IncomingMessage, res: ServerResponse): void => {
    const conn = this.#open.get(req.socket);
    if (conn === undefined || conn.closing) {
      // A refused connection, or one an answer closed: nothing sent on it is executed.
      req.socket.destroy();
      return;
    }
    if (conn.res !== undefined) {
      const queue = (conn.queue ??= []);
      if (queue.length >= 2 * MAX_PIPELINED) return void this.#forget(conn, true);
      queue.push(req, res);
      return;
    }
    this.#start(conn, req, res);
  };

  /**
   * Marks the answer on `res` as a stream that lasts as long as its client reads it: the answer
   * timeout no longer applies to it, and a drain ends it with `end` when it starts. The caller
   * refuses a stream while `draining` instead (it would be ended at once).
   */
  streaming(res: ServerResponse, end: () => void): void {
    const conn = this.#open.get(res.req.socket);
    if (conn === undefined || conn.res !== res) return;
    conn.endStream = end;
    this.#answering.delete(conn);
  }

  /** A client error Node raised before a request existed: answered in the Error shape after any answer still due on the connection. */
  clientError(err: NodeJS.ErrnoException, socket: Socket): void {
    // A reset connection has nobody to answer.
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const conn = this.#open.get(socket);
    if (conn?.res !== undefined) {
      // The client ended its side in the middle of a request: it can never complete, so the request
      // is aborted (its reader sees the client's abort) rather than left to time out.
      if (err.code === 'HPE_INVALID_EOF_STATE') return void socket.destroy();
      conn.pendingError = err;
      return;
    }
    socket.end(rawErrorAnswer(clientErrorOf(err)));
  }

  /**
   * Drains: every answer from now on closes its connection (Connection: close), and a connection
   * idle for DRAIN_IDLE_GRACE_MS is closed, for `drainMs`, or less when no connection is left (at
   * once when none is open), but never less than `minDrainMs`; then the listener closes
   * (`onStopListening` is told); resolves when no connection is left. Requests already sent are
   * answered.
   */
  async drain(drainMs: number, onStopListening: () => void = () => {}, minDrainMs = 0): Promise<void> {
    this.draining = true;
    for (const conn of this.#open.values()) {
      if (conn.res && !conn.res.headersSent && !conn.queue?.length) conn.res.shouldKeepAlive = false;
    }
    // The grace counts from now for every idle connection: the sweep's clock may be a second old, and one answered just
    // before the signal may be about to send its next request.
    const now = Date.now();
    for (const conn of this.#idle) conn.idleSince = now;
    // Streams never end by themselves: ended now, their clients reconnect elsewhere while this instance drains.
    for (const conn of [...this.#open.values()]) conn.endStream?.();
    // An idle keep-alive connection (a browser tab's, a client pool's spare) would otherwise hold the drain for all its
    // time: closed once it has sent nothing for the grace, as a keep-alive timeout would close it.
    const sweep = setInterval(() => this.#closeIdlePastGrace(), DRAIN_SWEEP_MS);
    try {
      await this.#drainTime(drainMs, minDrainMs);
    } finally {
      clearInterval(sweep);
    }
    const server = this.#server;
    // Stop accepting without closing idle connections at once (http.Server#close would): a fresh one may be sending.
    if (server?.listening) NetServer.prototype.close.call(server);
    onStopListening();
    while (this.#open.size > 0) {
      this.#closeIdlePastGrace();
      await sleep(DRAIN_SWEEP_MS);
    }
  }

  /** Closes each connection that has sent nothing for DRAIN_IDLE_GRACE_MS since it became idle (bytes since then are a request on its way). */
  #closeIdlePastGrace(): void {
    this.#clock = Date.now();
    for (const conn of this.#idle) {
      if (conn.socket.bytesRead === conn.bytesAtIdle && this.#clock - conn.idleSince >= DRAIN_IDLE_GRACE_MS) this.#forget(conn, true);
    }
  }

  /**
   * Resolves after the longer of `drainMs` and `minDrainMs`, or sooner once `minDrainMs` is over and
   * no connection has been open for DRAIN_RECONNECT_GRACE_MS (or none was open at the start).
   * The minimum is for a load balancer that checks /readyz but keeps no connection open between
   * requests: it must see the 503 before the listener closes, however idle the instance is.
   */
  #drainTime(drainMs: number, minDrainMs: number): Promise<void> {
    if (minDrainMs <= 0 && this.#open.size === 0) return Promise.resolve();
    return new Promise((done) => {
      let grace: NodeJS.Timeout | undefined;
      let least: NodeJS.Timeout | undefined;
      let minimumOver = minDrainMs <= 0;
      let quiet = this.#open.size === 0;
      const end = () => {
        clearTimeout(timer);
        clearTimeout(grace);
        clearTimeout(least);
        this.#drainWatch = undefined;
        done();
      };
      const endIfDue = () => {
        if (minimumOver && quiet) end();
      };
      const timer = setTimeout(end, Math.max(drainMs, minDrainMs));
      if (!minimumOver) {
        least = setTimeout(() => {
          minimumOver = true;
          endIfDue();
        }, minDrainMs);
      }
      this.#drainWatch = {
        emptied: () => {
          grace = setTimeout(() => {
            quiet = true;
            endIfDue();
          }, DRAIN_RECONNECT_GRACE_MS);
        },
        connected: () => {
          clearTimeout(grace);
          quiet = false;
        },
      };
    });
  }

  /**
   * Closes every connection with no request in progress, as the app closes: Node's own
   * closeIdleConnections skips a connection that has sent nothing yet (a client pool's spare, a
   * balancer's pre-opened one), and the server's close would wait for its client to give it up.
   */
  closeIdle(): void {
    // An answer still in progress (a stream just ended, a long list) finishes after this, and maybe after the server's own
    // close swept its idle connections: left idle then, it would hold the close until the client lets go (KEEP_ALIVE_TIMEOUT_MS).
    this.#closingIdle = true;
    // As the drain judges idle: bytes read since the last answer are a request on its way, answered before the close.
    for (const conn of [...this.#idle]) if (conn.socket.bytesRead === conn.bytesAtIdle) this.#forget(conn, true);
  }

  /**
   * When a connection became idle. The sweep's clock may be a whole sweep old (up to a second),
   * which the idle timeout does not mind; a drain's end does: it closes what has been idle for
   * DRAIN_IDLE_GRACE_MS, and a connection opened or answered just before would look idle that
   * long already, and be closed as its request arrives. While draining the clock is read now.
   */
  #idleClock(): number {
    return this.draining ? Date.now() : this.#clock;
  }

  /** Stops the sweep (the app closes). */
  close(): void {
    this.#stopSweep();
  }

  #connected(socket: Socket): void {
    // The app is closing and the listener about to: a connection accepted meanwhile (a client's spare) would hold the close.
    if (this.#closingIdle) return void socket.destroy();
    if (this.#open.size >= this.maxConnections) {
      const oldest = this.#evictable();
      if (oldest === undefined) return this.#refuse(socket);
      this.#forget(oldest, true);
    }
    const conn: Connection = {
      socket,
      openedAt: Date.now(),
      answered: false,
      req: undefined,
      res: undefined,
      startedAt: 0,
      queue: undefined,
      idleSince: this.#idleClock(),
      bytesAtIdle: 0,
      closing: false,
      timedOutAt: 0,
      pendingError: undefined,
      endStream: undefined,
    };
    this.#open.set(socket, conn);
    this.#idle.add(conn);
    this.#drainWatch?.connected();
    socket.once('close', () => this.#forget(conn, false));
  }

  /**
   * The idle connection to close at the cap, longest idle first: one that was answered (a kept-alive
   * spare, which a client reopens as it must whenever a server closes one), or one that has sent
   * nothing for FRESH_GRACE_MS. A connection accepted just before may have its first request in the
   * kernel's buffer, not yet read: closing it would cut that request unanswered, so the newcomer
   * gets the 503 instead. Undefined: none.
   */
  #evictable(): Connection | undefined {
    const now = Date.now();
    for (const conn of this.#idle) if (conn.answered || now - conn.openedAt >= FRESH_GRACE_MS) return conn;
    return undefined;
  }

  /** At the cap with no idle connection to close: 503 with Retry-After, and the connection closes. */
  #refuse(socket: Socket): void {
    socket.on('error', () => {});
    socket.end(rawErrorAnswer(new ApiError('service_unavailable', 'Too many open connections; retry shortly.', { 'retry-after': '1' })));
    // A client that never reads its answer does not keep the socket.
    socket.setTimeout(this.#options.requestTimeoutMs, () => socket.destroy());
  }

  #forget(conn: Connection, destroy: boolean): void {
    const known = this.#open.delete(conn.socket);
    this.#idle.delete(conn);
    this.#answering.delete(conn);
    if (destroy) conn.socket.destroy();
    if (known && this.#open.size === 0) this.#drainWatch?.emptied();
  }

  #start(conn: Connection, req: IncomingMessage, res: ServerResponse): void {
    conn.req = req;
    conn.res = res;
    conn.startedAt = this.#clock;
    this.#idle.delete(conn);
    this.#answering.add(conn);
    // While draining, the last request known on the connection closes it with its answer.
    if (this.draining && !conn.queue?.length) res.shouldKeepAlive = false;
    res.on('finish', this.#onFinish);
    this.#handler!(req, res);
  }

  #finished(res: ServerResponse): void {
    const conn = this.#open.get(res.req.socket);
    if (conn === undefined || conn.res !== res) return;
    this.#answering.delete(conn);
    conn.req = undefined;
    conn.res = undefined;
    conn.endStream = undefined;
    const socket = conn.socket;
    // Node ends the socket after an answer with Connection: close, before this runs; once the app is closing, its client
    // is not waited for (a stream ended by the close is answered so: it would hold the close until the client let go).
    if (!socket.writable) {
      if (this.#closingIdle) return void this.#forget(conn, true);
      conn.closing = true;
      conn.queue = undefined;
      return;
    }
    const queue = conn.queue;
    if (queue !== undefined && queue.length > 0) {
      this.#start(conn, queue.shift() as IncomingMessage, queue.shift() as ServerResponse);
      return;
    }
    if (conn.pendingError !== undefined) {
      conn.closing = true;
      socket.end(rawErrorAnswer(clientErrorOf(conn.pendingError)));
      return;
    }
    if (this.#closingIdle) return void this.#forget(conn, true);
    conn.answered = true;
    conn.idleSince = this.#idleClock();
    conn.bytesAtIdle = socket.bytesRead;
    this.#idle.add(conn);
  }

  /** CONNECT: Node drops it unless someone listens; answered like any request instead, then the connection closes. */
  #connectRequest(req: IncomingMessage, socket: Socket): void {
    socket.on('error', () => {});
    const res = new ServerResponse(req);
    res.shouldKeepAlive = false;
    res.assignSocket(socket);
    res.on('finish', () => {
      res.detachSocket(socket);
      socket.destroySoon();
    });
    this.handle(req, res);
  }

  #listening(): void {
    this.maxConnections = fitToFileLimit(this.#options.maxConnections, this.#options.warn);
    if (this.#sweep !== undefined) return;
    this.#sweep = setInterval(() => this.#expire(), this.#sweepEveryMs).unref();
  }

  #stopSweep(): void {
    clearInterval(this.#sweep);
    this.#sweep = undefined;
  }

  /** Requests whose body has not arrived in time get 408; sockets that linger after it are destroyed. */
  #expire(): void {
    const now = (this.#clock = Date.now());
    // The clock may lag a request's start by one sweep: allow that much more, never less than the setting.
    const limit = this.#options.requestTimeoutMs + this.#sweepEveryMs;
    for (const conn of this.#open.values()) {
      if (conn.timedOutAt !== 0) {
        if (now - conn.timedOutAt > limit) this.#forget(conn, true);
        continue;
      }
      const req = conn.req;
      if (req === undefined) continue;
      if (!req.complete && now - conn.startedAt >= limit) {
        conn.timedOutAt = now;
        timeOut(req, conn.res!);
      } else if (conn.endStream === undefined && now - conn.startedAt >= this.#options.answerTimeoutMs + this.#sweepEveryMs) {
        // Its answer has not gone out in all that time: the client is not reading it (or nothing will).
        this.#forget(conn, true);
      }
    }
  }
}

/**
 * Answers a request whose body stalled: the lane or Fastify reading the body answers the error
 * through the pipeline (request id, headers, log line); if nothing reads it yet, the answer is
 * written here. Either way the connection closes after it.
 */
function timeOut(req: IncomingMessage, res: ServerResponse): void {
  if (res.headersSent) return void req.socket.destroy();
  res.shouldKeepAlive = false;
  const err = new ApiError('request_timeout', 'The request body was not received in time.', { connection: 'close' });
  if (req.listenerCount('error') > 0) {
    req.emit('error', err);
    return;
  }
  req.socket.end(rawErrorAnswer(err));
}

/** What a client error Node raised is answered with. */
export function clientErrorOf(err: NodeJS.ErrnoException): ApiError {
  switch (err.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new ApiError('request_timeout');
    case 'HPE_HEADER_OVERFLOW':
      return new ApiError('headers_too_large');
    default:
      return new ApiError('bad_request');
  }
}

/**
 * The cap, lowered to fit the process's open-file limit where the system tells it (Linux): past
 * that limit every new connection would fail, whatever the cap.
 */
function fitToFileLimit(cap: number, warn: ConnectionOptions['warn']): number {
  const limit = openFileLimit();
  if (limit === undefined || cap <= limit - RESERVED_FILE_DESCRIPTORS) return cap;
  const fitted = Math.max(1, limit - RESERVED_FILE_DESCRIPTORS);
  warn({ maxConnections: cap, openFileLimit: limit, fitted }, 'MAX_CONNECTIONS is above what the open-file limit allows; using the lower cap');
  return fitted;
}

/** The soft limit on open files of this process, or undefined where it cannot be read. */
export function openFileLimit(): number | undefined {
  try {
    const line = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    return line ? Number(line[1]) : undefined;
  } catch {
    return undefined;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((done) => setTimeout(done, ms));
}
