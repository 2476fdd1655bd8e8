/**
 * One HTTP attempt to deliver one webhook message: POST over a kept-alive connection, never a
 * redirect followed, bounded in time and in what is read, the SSRF guard on the address connected to.
 * What the outcome means for the endpoint is domain/webhook.ts's nextStep, not this file's.
 */
import http from 'node:http';
import https from 'node:https';
import { performance } from 'node:perf_hooks';
import { urlToHttpOptions } from 'node:url';
import type { AttemptOutcome } from '../domain/webhook.js';
import { checkUrlBeforeConnect, guardedLookup, RefusedAddressError } from './address-guard.js';
import { boundedMemo } from './bounded-memo.js';

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

/** A URL as every attempt to it uses it, parsed and checked once: why it cannot be sent to, or where and how to connect. */
type Target = { problem: string } | { url: URL; options: http.RequestOptions };

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

/** Delivers webhook messages; one per process is enough: it keeps one kept-alive agent per receiver origin. */
export class WebhookSender {
  readonly #timeoutMs: number;
  readonly #allowPrivate: boolean;
  /** Made once: every agent and every request resolves through it. */
  readonly #lookup: ReturnType<typeof guardedLookup>;
  readonly #agents = new Map<string, http.Agent>();
  /** By URL text: each delivery would otherwise parse and check its endpoint's URL again. */
  readonly #target = boundedMemo(1000, (url: string) => this.#parse(url));

  constructor(options: { timeoutMs: number; allowPrivate: boolean }) {
    this.#timeoutMs = options.timeoutMs;
    this.#allowPrivate = options.allowPrivate;
    this.#lookup = guardedLookup(options.allowPrivate);
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
    const deadline = started + this.#timeoutMs;
    let answer = await this.#attempt(target, message.body, message.headers, deadline);
    // Node's documented remedy for a receiver closing an idle connection as we write to it: once more
    // on a new connection. The same webhook-id goes, so a receiver that did get the first one dedupes it.
    if (answer.staleConnection) answer = await this.#attempt(target, message.body, message.headers, deadline);
    return done(answer);
  }

  #parse(url: string): Target {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      return { problem: 'not a URL' };
    }
    // An IP literal is connected to without a lookup, so guardedLookup never sees it: check it here.
    const problem = checkUrlBeforeConnect(parsed, this.#allowPrivate);
    return problem === undefined ? { url: parsed, options: urlToHttpOptions(parsed) } : { problem };
  }

  /** Closes every kept-alive connection; the sender can still be used (it opens new ones). */
  close(): void {
    for (const agent of this.#agents.values()) agent.destroy();
    this.#agents.clear();
  }

  #agent(target: URL): http.Agent {
    let agent = this.#agents.get(target.origin);
    if (agent === undefined) {
      const options = { keepAlive: true, timeout: IDLE_MS, lookup: this.#lookup };
      agent = target.protocol === 'https:' ? new https.Agent(options) : new http.Agent(options);
      this.#agents.set(target.origin, agent);
    }
    return agent;
  }

  #attempt(target: { url: URL; options: http.RequestOptions }, body: string, headers: Record<string, string>, deadline: number): Promise<Answer> {
    return new Promise<Answer>((resolve) => {
      let settled = false;
      let answered = false;
      const finish = (answer: Answer): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(answer);
      };
      // One options object, as Node would make of the URL and these: the URL is not converted again for each attempt.
      const request = (target.url.protocol === 'https:' ? https : http).request({
        ...target.options,
        method: 'POST',
        agent: this.#agent(target.url),
        // Here too, not only on the agent: the request's options are what reach the connection.
        lookup: this.#lookup,
        headers: { ...headers, 'content-length': Buffer.byteLength(body).toString() },
      });
      const timeoutMs = this.#timeoutMs;
      const timer = setTimeout(() => {
        finish({ outcome: { error: `timed out after ${timeoutMs} ms` }, responseBody: null });
        request.destroy();
      }, Math.max(0, deadline - performance.now()));
      request.on('error', (error: NodeJS.ErrnoException) => {
        const stale = !answered && request.reusedSocket && (error.code === 'ECONNRESET' || error.code === 'EPIPE');
        finish({ outcome: { error: describe(error) }, responseBody: null, staleConnection: stale });
      });
      request.on('response', (response) => {
        answered = true;
        const status = response.statusCode ?? 0;
        const kept: Buffer[] = [];
        let keptBytes = 0;
        let read = 0;
        const answer = (): Answer => {
          const retryAfterMs = status === 429 || status === 503 ? parseRetryAfter(response.headers['retry-after'], new Date()) : undefined;
          // A cut multi-byte character at the 1 KiB edge decodes as U+FFFD: the log is for reading, not parsing.
          const responseBody = Buffer.concat(kept).toString('utf8');
          return { outcome: retryAfterMs === undefined ? { status } : { status, retryAfterMs }, responseBody };
        };
        response.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (keptBytes < KEEP_LIMIT) {
            const part = chunk.subarray(0, KEEP_LIMIT - keptBytes);
            kept.push(part);
            keptBytes += part.length;
          }
          if (read > READ_LIMIT) {
            finish(answer());
            request.destroy();
          }
        });
        response.on('end', () => finish(answer()));
        // The status came: a body cut short does not change what the receiver answered.
        response.on('error', () => finish(answer()));
      });
      request.end(body);
    });
  }
}
