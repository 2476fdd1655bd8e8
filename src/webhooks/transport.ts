/**
 * The webhook sender's connections: undici's Agent, with a Pool of kept-alive connections per
 * receiver origin, each opened through the guarded connector. Loaded by the sender on its first
 * send, not at start: undici is a large module, and most commands and many servers never deliver.
 */
import { Agent, Client, Pool, type Dispatcher } from 'undici';
import { Attempt, type Exchanged, type ReadLimits, type Served } from './attempt.js';
import { guardedConnector } from './guarded-connector.js';

export interface TransportOptions extends ReadLimits {
  /** An attempt's time from its dispatch to its answer (WEBHOOK_TIMEOUT_MS); a connection not made within it fails too. */
  timeoutMs: number;
  /** WEBHOOKS_ALLOW_PRIVATE. */
  allowPrivate: boolean;
  /** An idle kept-alive connection is closed after this (or a second before the receiver's own Keep-Alive timeout, if sooner). */
  idleMs: number;
  /** What the attempts that close() cuts fail with. */
  closedMessage: string;
}

/** The dispatch options of one attempt, which name it so that the connection it is handed to can tell it. */
interface AttemptOptions extends Dispatcher.DispatchOptions {
  attempt: Attempt;
}

/** An undici Client (one connection at a time) that counts the answers on its current socket, so an attempt knows whether it went over a kept-alive one. */
class Connection extends Client implements Served {
  served = 0;

  constructor(origin: URL, options: Client.Options) {
    super(origin, options);
    this.on('connect', () => {
      this.served = 0;
    });
  }

  override dispatch(options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    const attempt = (options as Partial<AttemptOptions>).attempt;
    if (attempt !== undefined) attempt.connection = this;
    return super.dispatch(options, handler);
  }
}

/** What the sender sends over: one POST and its answer at a time per connection, pooled per origin. */
export class Transport {
  readonly #options: TransportOptions;
  #agent: Agent;

  constructor(options: TransportOptions) {
    this.#options = options;
    this.#agent = this.#newAgent();
  }

  /** POSTs `body` with `headers` to `path` at `origin`; settles within `ms` whatever the receiver does. */
  exchange(origin: string, path: string, body: string, headers: Record<string, string>, ms: number): Promise<Exchanged> {
    return new Promise<Exchanged>((resolve) => {
      const attempt = new Attempt(this.#options, resolve);
      attempt.deadline(ms, `timed out after ${this.#options.timeoutMs} ms`);
      const options: AttemptOptions = { origin, path, method: 'POST', headers, body, attempt };
      this.#agent.dispatch(options, attempt);
    });
  }

  /** Closes every connection, failing the attempts under way on them or waiting for one (not resent); later exchanges open new ones. */
  close(): void {
    const agent = this.#agent;
    this.#agent = this.#newAgent();
    agent.destroy(new Error(this.#options.closedMessage)).catch(() => undefined);
  }

  #newAgent(): Agent {
    const { allowPrivate, timeoutMs, idleMs } = this.#options;
    return new Agent({
      connect: guardedConnector({ allowPrivate, timeoutMs }),
      keepAliveTimeout: idleMs,
      // A receiver's Keep-Alive hint is honoured less a second, so it cannot close a connection as a request is written; never past idleMs.
      keepAliveMaxTimeout: idleMs,
      keepAliveTimeoutThreshold: 1000,
      // The attempt's own deadline bounds it whole: undici's per-phase timers would only be more to run.
      headersTimeout: 0,
      bodyTimeout: 0,
      // A POST is never pipelined: undici writes a request that is not idempotent only once the one before it on the
      // connection was answered. Above 1, a connection whose answer is complete takes the next request at once; at 1,
      // only an event-loop turn later, and the endpoint's next delivery, dispatched before that, opened a second one.
      pipelining: 2,
      factory: (origin, options) => new Pool(origin, { ...options, factory: (at, clientOptions) => new Connection(at, clientOptions) }),
    });
  }
}
