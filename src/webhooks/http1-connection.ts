/**
 * Kept-alive HTTP/1.1 connections to webhook receivers, one exchange at a time on each: what
 * node:http's Agent and ClientRequest did for the sender, without their general machinery, which
 * cost a quarter of a delivery's CPU. A request is written whole, in one write.
 */
import net, { type LookupFunction } from 'node:net';
import tls from 'node:tls';
import { AnswerReader } from './http1-answer.js';

/** Where to connect, as every exchange with one origin uses it. */
export interface Origin {
  /** The URL's origin: the key connections are kept under. */
  key: string;
  tls: boolean;
  /** A name or an IP address, without the brackets of an IPv6 literal. */
  host: string;
  port: number;
  /** SNI and the name the certificate is checked against; undefined for an IP literal (checked against the address). */
  servername: string | undefined;
}

/** What an exchange came to: the answer's status and what of its body was kept, or why there is none. */
export type Exchanged =
  | { status: number; retryAfter: string | undefined; body: Buffer }
  | {
      error: Error;
      /** It failed before any byte of an answer on a connection that had served earlier ones: the receiver had closed it. */
      stale: boolean;
    };

export interface ExchangeLimits {
  /** The body is read this far, then the connection is dropped. */
  readLimit: number;
  /** What of the body is kept. */
  keepLimit: number;
  /** An idle connection is closed after this. */
  idleMs: number;
}

/** Idle connections kept per origin at most, as node:http's Agent (maxFreeSockets); more are closed. */
const MAX_IDLE_PER_ORIGIN = 256;

/** What the receiver closing the connection before an answer is called: the code node:http gave it. */
function hangUp(): Error {
  return Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
}

/** One connection to one origin. */
class Connection {
  readonly #socket: net.Socket;
  readonly #pool: Http1Pool;
  readonly #origin: Origin;
  readonly #limits: ExchangeLimits;
  /** Answers completed on it: a connection that served one is reused by the next exchange, which may find it closed by the receiver. */
  #served = 0;
  #idleMs: number;
  // The exchange under way, if one is.
  #reader: AnswerReader | undefined;
  #done: ((result: Exchanged) => void) | undefined;
  #kept: Buffer[] = [];
  #keptBytes = 0;
  #read = 0;

  constructor(pool: Http1Pool, origin: Origin, limits: ExchangeLimits, lookup: LookupFunction, session: Buffer | undefined) {
    this.#pool = pool;
    this.#origin = origin;
    this.#limits = limits;
    this.#idleMs = limits.idleMs;
    const common = { host: origin.host, port: origin.port, lookup, noDelay: true, keepAlive: true, keepAliveInitialDelay: 1000 };
    this.#socket = origin.tls ? tls.connect({ ...common, servername: origin.servername, session }) : net.connect(common);
    if (origin.tls) this.#socket.on('session', (saved: Buffer) => pool.saveSession(origin.key, saved));
    this.#socket.setTimeout(this.#idleMs);
    this.#socket.on('data', (chunk: Buffer) => this.#data(chunk));
    this.#socket.on('end', () => this.#end());
    this.#socket.on('error', (error: NodeJS.ErrnoException) => this.#error(error));
    this.#socket.on('close', () => this.#closed());
    this.#socket.on('timeout', () => {
      // An exchange under way has its own deadline, the sender's.
      if (this.#reader === undefined) this.#socket.destroy();
    });
  }

  get usable(): boolean {
    return !this.#socket.destroyed && this.#reader === undefined;
  }

  /** Writes a whole request and reads its answer; `done` is called once, unless the exchange is aborted. */
  exchange(request: string, done: (result: Exchanged) => void): void {
    this.#reader = new AnswerReader(this.#body);
    this.#done = done;
    this.#kept = [];
    this.#keptBytes = 0;
    this.#read = 0;
    this.#socket.ref();
    this.#socket.write(request);
  }

  /** Drops the connection; an exchange under way is not answered. */
  abort(): void {
    this.#done = undefined;
    this.#socket.destroy();
  }

  /** Drops the connection; an exchange under way ends as if the receiver had hung up (not a stale connection: nothing is resent). */
  destroy(): void {
    this.#settle({ error: hangUp(), stale: false });
    this.#socket.destroy();
  }

  readonly #body = (bytes: Buffer): void => {
    this.#read += bytes.length;
    if (this.#keptBytes < this.#limits.keepLimit) {
      const part = bytes.subarray(0, this.#limits.keepLimit - this.#keptBytes);
      // A copy: the socket's buffer is not pinned by the few bytes kept of it.
      this.#kept.push(Buffer.from(part));
      this.#keptBytes += part.length;
    }
  };

  #data(chunk: Buffer): void {
    const reader = this.#reader;
    if (reader === undefined) {
      // Bytes nobody asked for: the connection cannot be trusted with another exchange.
      this.#socket.destroy();
      return;
    }
    try {
      reader.feed(chunk);
    } catch (error) {
      this.#settle({ error: error as Error, stale: false });
      this.#socket.destroy();
      return;
    }
    if (this.#read > this.#limits.readLimit) {
      this.#answer(reader);
      this.#socket.destroy();
    } else if (reader.complete) {
      this.#answer(reader);
      this.#served++;
      if (this.#keep(reader)) this.#pool.release(this.#origin.key, this);
      else this.#socket.destroy();
    }
  }

  /** Whether the connection may carry another exchange; with the receiver's Keep-Alive hint honoured as node:http's Agent does. */
  #keep(reader: AnswerReader): boolean {
    if (!reader.reusable || reader.trailing) return false;
    let idleMs = this.#limits.idleMs;
    if (reader.keepAliveSeconds !== undefined) {
      // A second before the receiver's own timeout, so that it cannot close the connection as a request is written.
      const hinted = reader.keepAliveSeconds * 1000 - 1000;
      if (hinted <= 0) return false;
      idleMs = Math.min(idleMs, hinted);
    }
    if (idleMs !== this.#idleMs) {
      this.#idleMs = idleMs;
      this.#socket.setTimeout(idleMs);
    }
    this.#socket.unref();
    return true;
  }

  #end(): void {
    const reader = this.#reader;
    if (reader === undefined) return;
    // An answer read to the connection's end, or cut short after its status came: the status is what the receiver answered.
    if (reader.end() || reader.headRead) this.#answer(reader);
    else this.#settle({ error: hangUp(), stale: this.#served > 0 && !reader.started });
    this.#socket.destroy();
  }

  #error(error: NodeJS.ErrnoException): void {
    const reader = this.#reader;
    const stale = this.#served > 0 && reader !== undefined && !reader.started && (error.code === 'ECONNRESET' || error.code === 'EPIPE');
    if (this.#origin.tls && this.#served === 0) this.#pool.saveSession(this.#origin.key, undefined);
    this.#settle({ error, stale });
  }

  #closed(): void {
    this.#settle({ error: hangUp(), stale: this.#served > 0 && this.#reader !== undefined && !this.#reader.started });
    this.#pool.forget(this.#origin.key, this);
  }

  #answer(reader: AnswerReader): void {
    this.#settle({ status: reader.status, retryAfter: reader.retryAfter, body: this.#keptBytes === 0 ? Buffer.alloc(0) : Buffer.concat(this.#kept) });
  }

  #settle(result: Exchanged): void {
    const done = this.#done;
    this.#reader = undefined;
    this.#done = undefined;
    this.#kept = [];
    done?.(result);
  }
}

/** An exchange under way, for its sender's deadline. */
export interface Exchange {
  abort(): void;
}

/** The connections of one sender: by origin, those idle (the last used is used first), and every open one, for close(). */
export class Http1Pool {
  readonly #limits: ExchangeLimits;
  readonly #lookup: LookupFunction;
  readonly #idle = new Map<string, Connection[]>();
  readonly #open = new Set<Connection>();
  /** A TLS session per origin, so that a new connection resumes it instead of a full handshake, as https.Agent does. */
  readonly #sessions = new Map<string, Buffer>();

  constructor(limits: ExchangeLimits, lookup: LookupFunction) {
    this.#limits = limits;
    this.#lookup = lookup;
  }

  /** One request, written whole, and its answer: on an idle connection to the origin unless `fresh`, else on a new one. */
  exchange(origin: Origin, request: string, fresh: boolean, done: (result: Exchanged) => void): Exchange {
    let connection = fresh ? undefined : this.#takeIdle(origin.key);
    if (connection === undefined) {
      connection = new Connection(this, origin, this.#limits, this.#lookup, this.#sessions.get(origin.key));
      this.#open.add(connection);
    }
    connection.exchange(request, done);
    return connection;
  }

  /** Closes every connection; an exchange under way on one ends as a hang-up, not resent. The pool can still be used. */
  close(): void {
    for (const connection of [...this.#open]) connection.destroy();
    this.#open.clear();
    this.#idle.clear();
  }

  #takeIdle(key: string): Connection | undefined {
    const idle = this.#idle.get(key);
    while (idle !== undefined && idle.length > 0) {
      const connection = idle.pop()!;
      if (connection.usable) return connection;
    }
    return undefined;
  }

  /** A connection done with its exchange and fit for another. */
  release(key: string, connection: Connection): void {
    let idle = this.#idle.get(key);
    if (idle === undefined) {
      idle = [];
      this.#idle.set(key, idle);
    }
    if (idle.length < MAX_IDLE_PER_ORIGIN) idle.push(connection);
    else connection.destroy();
  }

  /** A connection closed. */
  forget(key: string, connection: Connection): void {
    this.#open.delete(connection);
    const idle = this.#idle.get(key);
    if (idle === undefined) return;
    const at = idle.indexOf(connection);
    if (at !== -1) idle.splice(at, 1);
    if (idle.length === 0) this.#idle.delete(key);
  }

  saveSession(key: string, session: Buffer | undefined): void {
    if (session === undefined) this.#sessions.delete(key);
    else this.#sessions.set(key, session);
  }
}
