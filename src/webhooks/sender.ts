/**
 * One HTTP attempt to deliver one webhook message: POST over a kept-alive connection, never a
 * redirect followed, bounded in time and in what is read, the SSRF guard on the address connected to.
 * What the outcome means for the endpoint is domain/webhook.ts's nextStep, not this file's.
 * The HTTP client is undici (transport.ts): answers come from hosts we do not control, and its
 * parser is maintained (decisions 10.9).
 */
import { performance } from 'node:perf_hooks';
import type { AttemptOutcome } from '../domain/webhook.js';
import { checkUrlBeforeConnect, RefusedAddressError } from './address-guard.js';
import type { Exchanged } from './attempt.js';
import { boundedMemo } from './bounded-memo.js';
import type { Transport } from './transport.js';

/** How one attempt went, as the delivery log keeps it. */
export interface SentAttempt {
  outcome: AttemptOutcome;
  /** Whole milliseconds from the start of the attempt to its outcome. */
  durationMs: number;
  /** The first 1 KiB of the answer's body ('' for an empty one); null when no answer came. */
  responseBody: string | null;
}

/** The answer body is read this far, then the connection is dropped: a receiver cannot make us read forever. */
const READ_LIMIT = 64 * 1024;
/** What of the answer body the delivery log keeps. */
const KEEP_LIMIT = 1024;
/**
 * An idle kept-alive connection is closed after this, before a receiver's own idle timeout (Node's
 * default is 5 s) can close it just as a delivery is written to it.
 */
const IDLE_MS = 4000;

/** What a send cancelled by close() reports. */
const SENDER_CLOSED = 'the sender was closed';

/** A URL as every attempt to it uses it, parsed and checked once: why it cannot be sent to, or its origin and path. */
type Target = { problem: string } | { origin: string; path: string };

/** A Retry-After value (delay-seconds or an HTTP date) in ms from now; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | undefined, now: Date): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now.getTime());
}

/**
 * A network error as the delivery log says it: our refusal's message; else Node's code (ECONNREFUSED,
 * a certificate's fault) or the parser's (HPE_...); else, for undici's own errors, whose code is
 * the same for every socket fault, the message ("other side closed").
 */
function describe(error: Error): string {
  if (error instanceof RefusedAddressError) return error.message;
  const code = (error as NodeJS.ErrnoException).code;
  return typeof code === 'string' && code !== '' && !code.startsWith('UND_ERR_') ? code : error.message;
}

/** What an exchange means for the delivery log. */
function outcomeOf(result: Exchanged): { outcome: AttemptOutcome; responseBody: string | null } {
  if ('error' in result) return { outcome: { error: describe(result.error) }, responseBody: null };
  const status = result.status;
  const retryAfterMs = status === 429 || status === 503 ? parseRetryAfter(result.retryAfter, new Date()) : undefined;
  // A cut multi-byte character at the 1 KiB edge decodes as U+FFFD: the log is for reading, not parsing.
  const responseBody = result.body.toString('utf8');
  return { outcome: retryAfterMs === undefined ? { status } : { status, retryAfterMs }, responseBody };
}

/** Delivers webhook messages; one per process is enough: it keeps the connections to each receiver origin alive. */
export class WebhookSender {
  readonly #timeoutMs: number;
  readonly #allowPrivate: boolean;
  /** undici, loaded on the first send. */
  #transport: Transport | undefined;
  #loading: Promise<Transport> | undefined;
  /** How many times close() was called, so a send that waited for undici to load knows it was cancelled meanwhile. */
  #closes = 0;
  /** By URL text: each delivery would otherwise parse and check its endpoint's URL again. */
  readonly #target = boundedMemo(1000, (url: string) => this.#parse(url));

  constructor(options: { timeoutMs: number; allowPrivate: boolean }) {
    this.#timeoutMs = options.timeoutMs;
    this.#allowPrivate = options.allowPrivate;
  }

  /** POSTs the message's body with its headers to url once (one silent resend if a kept-alive connection turned out closed); never throws. */
  async send(url: string, message: { id: string; body: string; headers: Record<string, string> }): Promise<SentAttempt> {
    const started = performance.now();
    const target = this.#target(url);
    if ('problem' in target) return { outcome: { error: target.problem }, durationMs: Math.round(performance.now() - started), responseBody: null };
    let transport = this.#transport;
    if (transport === undefined) {
      const closes = this.#closes;
      transport = await this.#load();
      // Closed while undici loaded: this send was under way, and is cancelled like the others.
      if (this.#closes !== closes) return { outcome: { error: SENDER_CLOSED }, durationMs: Math.round(performance.now() - started), responseBody: null };
    }
    let result = await transport.exchange(target.origin, target.path, message.body, message.headers, this.#timeoutMs);
    // Node's documented remedy for a receiver closing an idle connection as we write to it, which undici
    // leaves to its caller for a POST: once more. The same webhook-id goes, so a receiver that did get the first one dedupes it.
    if ('error' in result && result.stale) {
      result = await transport.exchange(target.origin, target.path, message.body, message.headers, Math.max(0, started + this.#timeoutMs - performance.now()));
    }
    const { outcome, responseBody } = outcomeOf(result);
    return { outcome, durationMs: Math.round(performance.now() - started), responseBody };
  }

  /** Closes every kept-alive connection, failing the sends under way on them (they are not resent); the sender can still be used (it opens new ones). */
  close(): void {
    this.#closes++;
    this.#transport?.close();
  }

  #load(): Promise<Transport> {
    this.#loading ??= import('./transport.js').then(({ Transport }) => {
      this.#transport = new Transport({ timeoutMs: this.#timeoutMs, allowPrivate: this.#allowPrivate, readLimit: READ_LIMIT, keepLimit: KEEP_LIMIT, idleMs: IDLE_MS, closedMessage: SENDER_CLOSED });
      return this.#transport;
    });
    return this.#loading;
  }

  #parse(url: string): Target {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      return { problem: 'not a URL' };
    }
    // An IP literal is connected to without a lookup, so the guarded lookup never sees it: check it here, before undici connects.
    const problem = checkUrlBeforeConnect(parsed, this.#allowPrivate);
    // Framed as the lookup's refusals are, so every refusal of the guard reads the same in the delivery log.
    if (problem !== undefined) return { problem: `refused: ${problem}` };
    return { origin: parsed.origin, path: `${parsed.pathname}${parsed.search}` };
  }
}
