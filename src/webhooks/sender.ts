/**
 * One HTTP attempt to deliver one webhook message: POST over a kept-alive connection, never a
 * redirect followed, bounded in time and in what is read, the SSRF guard on the address connected to.
 * What the outcome means for the endpoint is domain/webhook.ts's nextStep, not this file's.
 * The request goes out over http1-connection.ts rather than node:http, whose general machinery
 * cost a quarter of a delivery's CPU; what is sent and how answers are read are node:http's.
 */
import { validateHeaderName, validateHeaderValue } from 'node:http';
import { isIP } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { AttemptOutcome } from '../domain/webhook.js';
import { checkUrlBeforeConnect, guardedLookup, RefusedAddressError, urlHost } from './address-guard.js';
import { boundedMemo } from './bounded-memo.js';
import { Http1Pool, type Exchanged, type Origin } from './http1-connection.js';

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

/**
 * A URL as every attempt to it uses it, parsed and checked once: why it cannot be sent to, or where
 * to connect and the request's fixed parts (its line, and the Host and Connection headers node:http added).
 */
type Target = { problem: string } | { origin: Origin; requestLine: string; lastHeaders: string };

interface Answer {
  outcome: AttemptOutcome;
  responseBody: string | null;
  /** The attempt failed before any answer on a connection that had served earlier ones (the receiver may have closed it as we wrote). */
  staleConnection?: boolean;
}

/** A Retry-After value (delay-seconds or an HTTP date) in ms from now; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | undefined, now: Date): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now.getTime());
}

/** A network error as the delivery log says it: our refusal's message, else Node's code, else the message. */
function describe(error: Error): string {
  if (error instanceof RefusedAddressError) return error.message;
  const code = (error as NodeJS.ErrnoException).code;
  return typeof code === 'string' && code !== '' ? code : error.message;
}

/** The request's head and body, as node:http wrote them (one string, so one write); or why a header cannot be sent, as node:http refused it. */
function requestText(target: { requestLine: string; lastHeaders: string }, body: string, headers: Record<string, string>): string | { problem: string } {
  let text = target.requestLine;
  for (const name in headers) {
    const value = headers[name]!;
    try {
      // node:http's own checks (a token for the name, no control characters in the value: no header injection), with its messages.
      validateHeaderName(name);
      validateHeaderValue(name, value);
    } catch (err) {
      return { problem: (err as Error).message };
    }
    text += `${name}: ${value}\r\n`;
  }
  return `${text}content-length: ${Buffer.byteLength(body)}\r\n${target.lastHeaders}${body}`;
}

/** Delivers webhook messages; one per process is enough: it keeps the connections to each receiver origin alive. */
export class WebhookSender {
  readonly #timeoutMs: number;
  readonly #allowPrivate: boolean;
  readonly #pool: Http1Pool;
  /** By URL text: each delivery would otherwise parse and check its endpoint's URL again. */
  readonly #target = boundedMemo(1000, (url: string) => this.#parse(url));

  constructor(options: { timeoutMs: number; allowPrivate: boolean }) {
    this.#timeoutMs = options.timeoutMs;
    this.#allowPrivate = options.allowPrivate;
    // Every connection resolves through the guard: the check is on the address connected to.
    this.#pool = new Http1Pool({ readLimit: READ_LIMIT, keepLimit: KEEP_LIMIT, idleMs: IDLE_MS }, guardedLookup(options.allowPrivate));
  }

  /** POSTs the message's body with its headers to url once (one silent resend if a reused connection turned out closed); never throws. */
  async send(url: string, message: { id: string; body: string; headers: Record<string, string> }): Promise<SentAttempt> {
    const started = performance.now();
    const done = (answer: Answer): SentAttempt => ({
      outcome: answer.outcome,
      durationMs: Math.round(performance.now() - started),
      responseBody: answer.responseBody,
    });
    const target = this.#target(url);
    if ('problem' in target) return done({ outcome: { error: target.problem }, responseBody: null });
    const request = requestText(target, message.body, message.headers);
    if (typeof request !== 'string') return done({ outcome: { error: request.problem }, responseBody: null });
    const deadline = started + this.#timeoutMs;
    let answer = await this.#attempt(target.origin, request, false, deadline);
    // Node's documented remedy for a receiver closing an idle connection as we write to it: once more
    // on a new connection. The same webhook-id goes, so a receiver that did get the first one dedupes it.
    if (answer.staleConnection) answer = await this.#attempt(target.origin, request, true, deadline);
    return done(answer);
  }

  #parse(url: string): Target {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      return { problem: 'not a URL' };
    }
    // An IP literal is connected to without a lookup, so the guarded lookup never sees it: check it here.
    const problem = checkUrlBeforeConnect(parsed, this.#allowPrivate);
    if (problem !== undefined) return { problem };
    const secure = parsed.protocol === 'https:';
    const host = urlHost(parsed);
    return {
      origin: {
        key: parsed.origin,
        tls: secure,
        host,
        port: parsed.port === '' ? (secure ? 443 : 80) : Number(parsed.port),
        servername: isIP(host) === 0 ? host : undefined,
      },
      requestLine: `POST ${parsed.pathname}${parsed.search} HTTP/1.1\r\n`,
      // URL.host is Node's Host header: the port only when not the scheme's, an IPv6 literal in brackets.
      lastHeaders: `Host: ${parsed.host}\r\nConnection: keep-alive\r\n\r\n`,
    };
  }

  /** Closes every kept-alive connection, failing the sends under way on them (they are not resent); the sender can still be used (it opens new ones). */
  close(): void {
    this.#pool.close();
  }

  #attempt(origin: Origin, request: string, fresh: boolean, deadline: number): Promise<Answer> {
    return new Promise<Answer>((resolve) => {
      const timeoutMs = this.#timeoutMs;
      const timer = setTimeout(() => {
        exchange.abort();
        resolve({ outcome: { error: `timed out after ${timeoutMs} ms` }, responseBody: null });
      }, Math.max(0, deadline - performance.now()));
      const exchange = this.#pool.exchange(origin, request, fresh, (result: Exchanged) => {
        clearTimeout(timer);
        if ('error' in result) {
          resolve({ outcome: { error: describe(result.error) }, responseBody: null, staleConnection: result.stale });
          return;
        }
        const status = result.status;
        const retryAfterMs = status === 429 || status === 503 ? parseRetryAfter(result.retryAfter, new Date()) : undefined;
        // A cut multi-byte character at the 1 KiB edge decodes as U+FFFD: the log is for reading, not parsing.
        const responseBody = result.body.toString('utf8');
        resolve({ outcome: retryAfterMs === undefined ? { status } : { status, retryAfterMs }, responseBody });
      });
    });
  }
}
