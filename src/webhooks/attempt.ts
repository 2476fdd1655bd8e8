/**
 * One request's answer as undici hands it over (its dispatch handler): the status, the first
 * Retry-After, the body read up to a limit and kept up to a smaller one, or why no answer came.
 * Whatever happens, `done` is called once: with the answer, or with the error, and a deadline or a
 * cancel settles it at once whether undici has started the request or not.
 */
import type { Dispatcher } from 'undici';

/** What an exchange came to: the answer's status and what of its body was kept, or why there is none. */
export type Exchanged =
  | { status: number; retryAfter: string | undefined; body: Buffer }
  | {
      error: Error;
      /** It failed before any answer on a kept-alive connection that had served earlier ones: the receiver had closed it. */
      stale: boolean;
    };

export interface ReadLimits {
  /** The body is read this far, then the connection is dropped. */
  readLimit: number;
  /** What of the body is kept. */
  keepLimit: number;
}

/** The connection a request was written on, as far as the attempt needs to know it. */
export interface Served {
  /** Answers completed on its current socket. */
  served: number;
}

/** The errors of a connection closed under a request: the receiver's doing, before any byte of an answer. */
const CLOSED_CODES = new Set(['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE']);

/** The reason undici is given when an answer is dropped at the read limit (never reported: the status is). */
const READ_LIMIT_REACHED = new Error('the answer passed the read limit');

/** One attempt's handler; undici calls it, the sender waits on `done`. */
export class Attempt implements Dispatcher.DispatchHandler {
  /** The connection the request was handed to (set by it), so reuse can be told at the write. */
  connection: Served | undefined;
  readonly #limits: ReadLimits;
  #done: ((result: Exchanged) => void) | undefined;
  #timer: NodeJS.Timeout | undefined;
  #controller: Dispatcher.DispatchController | undefined;
  /** Why the attempt was settled before undici started it: it is aborted as soon as undici does. */
  #cancelled: Error | undefined;
  #reused = false;
  #status = 0;
  #retryAfter: string | undefined;
  #kept: Buffer[] = [];
  #keptBytes = 0;
  #read = 0;

  constructor(limits: ReadLimits, done: (result: Exchanged) => void) {
    this.#limits = limits;
    this.#done = done;
  }

  /** Settles the attempt with an error saying `message` after `ms`, if nothing did before. */
  deadline(ms: number, message: string): void {
    // The error is made only if the time runs out: its stack costs more than the rest of an attempt's bookkeeping.
    this.#timer = setTimeout(() => this.cancel(new Error(message)), ms);
  }

  /** Ends the attempt now with `error` (not a stale connection: nothing is resent), and stops undici's request. */
  cancel(error: Error): void {
    this.#settle({ error, stale: false });
    if (this.#controller === undefined) this.#cancelled = error;
    else this.#controller.abort(error);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    if (this.#cancelled !== undefined) return controller.abort(this.#cancelled);
    this.#controller = controller;
    // Read as the request is written: a connection that answered before is a kept-alive one, which the receiver may have closed meanwhile.
    this.#reused = (this.connection?.served ?? 0) > 0;
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    // An interim answer (1xx): the final one follows.
    if (statusCode < 200) return;
    this.#status = statusCode;
    const retryAfter = headers['retry-after'];
    this.#retryAfter = Array.isArray(retryAfter) ? retryAfter[0] : retryAfter;
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.#read += chunk.length;
    const room = this.#limits.keepLimit - this.#keptBytes;
    if (room > 0) {
      // A copy: the socket's buffer is not pinned by the few bytes kept of it.
      const part = Buffer.from(chunk.subarray(0, room));
      this.#kept.push(part);
      this.#keptBytes += part.length;
    }
    if (this.#read > this.#limits.readLimit) {
      this.#answer();
      // A receiver cannot make us read forever: the connection is dropped with the rest of the answer.
      controller.abort(READ_LIMIT_REACHED);
    }
  }

  onResponseEnd(): void {
    if (this.connection !== undefined) this.connection.served++;
    this.#answer();
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    // An answer cut short after its status came: the status is what the receiver answered.
    if (this.#status !== 0) return this.#answer();
    const code = (error as NodeJS.ErrnoException).code;
    this.#settle({ error, stale: this.#reused && code !== undefined && CLOSED_CODES.has(code) });
  }

  #answer(): void {
    const body = this.#keptBytes === 0 ? Buffer.alloc(0) : this.#kept.length === 1 ? this.#kept[0]! : Buffer.concat(this.#kept);
    this.#settle({ status: this.#status, retryAfter: this.#retryAfter, body });
  }

  #settle(result: Exchanged): void {
    const done = this.#done;
    if (done === undefined) return;
    this.#done = undefined;
    clearTimeout(this.#timer);
    this.#kept = [];
    done(result);
  }
}
