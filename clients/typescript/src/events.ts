import { errorFromAnswer, eventsHeadOf, unexpectedAnswer, type InventoryApiError } from './errors.js';
import { INVENTORY_EVENT_TYPES } from './generated/openapi.js';
import { parseJson } from './json.js';
import { retryDelay, type FetchLike, type RetryPolicy } from './retry.js';
import { SseParser } from './sse.js';
import type { FollowedEvent, InventoryEvent } from './types.js';

export interface FollowOptions {
  /** Follow from the event after this seq (a seq from listEvents, X-Events-Head, or an event); default: from the head when following starts. */
  after?: number;
  /** Aborting it ends the iteration cleanly: the loop ends, nothing is thrown. */
  signal?: AbortSignal;
  /** Hears each time the stream is live (again), and each time it is cut or refused and will be tried again. */
  onStatus?: (status: FollowStatus) => void;
  /** A connection silent for this long (the service sends a keep-alive every 15 s) is taken as cut and opened again; default 45000. */
  idleTimeoutMs?: number;
}

/** Where a follower stands: live from `after`, or waiting `delayMs` to try again after `error` (the `attempt`-th failure in a row). */
export type FollowStatus = { state: 'live'; after: number } | { state: 'reconnecting'; error: unknown; delayMs: number; attempt: number };

/** What a follower needs of the client: where the API is, the headers of every request, a fetch that does not retry by itself, the back-off. */
export interface FollowContext {
  baseUrl: string;
  headers: Record<string, string>;
  fetch: FetchLike;
  policy: RetryPolicy;
}

/** The types to yield, generated from the document: a type the service adds is there once the client is generated again. */
const EVENT_TYPES: readonly string[] = INVENTORY_EVENT_TYPES;
const DEFAULT_IDLE_TIMEOUT_MS = 45_000;

/**
 * The live stream (GET /events/stream), as an async iterator of events and resets. A cut
 * connection (a network error, the service closing streams as it shuts down, a 503, a silence
 * past idleTimeoutMs) is opened again after a back-off with Last-Event-ID set to the last seq
 * seen, so each event comes once across it; a seq not above the last one is dropped should a
 * replay repeat it. Any other refusal (401, 403, 404...) ends the iteration with InventoryApiError.
 */
export async function* followEvents(context: FollowContext, options: FollowOptions = {}): AsyncGenerator<FollowedEvent, void, undefined> {
  const { signal, onStatus } = options;
  const idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
  let last = options.after;
  let failures = 0;
  while (!signal?.aborted) {
    const connection = new AbortController();
    const stop = () => connection.abort();
    signal?.addEventListener('abort', stop);
    let failure: unknown;
    let retryAfter: string | null = null;
    try {
      // Without a position, the head is read first: a cut before the first event then resumes there, missing nothing.
      last ??= await readHead(context, connection.signal);
      const response = await context.fetch(
        new Request(`${apiBase(context)}/events/stream`, {
          headers: { ...context.headers, accept: 'text/event-stream', 'last-event-id': String(last) },
          signal: connection.signal,
        }),
      );
      if (!response.ok) {
        const error = await answerError(response);
        if (response.status !== 503) throw error;
        failure = error;
        retryAfter = response.headers.get('retry-after');
      } else {
        if (!/^text\/event-stream\b/i.test(response.headers.get('content-type') ?? '')) {
          throw unexpectedAnswer(response, await response.text().catch(() => ''), 'the answer is not an event stream');
        }
        failures = 0;
        onStatus?.({ state: 'live', after: last });
        for await (const message of messages(response, connection, idleTimeoutMs)) {
          if (message.event === 'reset') {
            const head = resetHead(response, message.data);
            last = head;
            yield { type: 'reset', head };
          } else if (EVENT_TYPES.includes(message.event)) {
            const event = parseEvent(response, message.data);
            if (event.seq <= last) continue;
            last = event.seq;
            yield event;
          }
          // Another event name is one this client does not know yet: skipped, as the format intends.
        }
        failure = new TypeError(connection.signal.aborted ? silence(idleTimeoutMs) : 'the event stream ended');
      }
    } catch (error) {
      if (signal?.aborted) return;
      // Cut: the network (fetch's TypeError), or the silence timer. Anything else is the answer to the caller.
      if (!(error instanceof TypeError) && !connection.signal.aborted) throw error;
      failure = connection.signal.aborted ? new TypeError(silence(idleTimeoutMs)) : error;
    } finally {
      signal?.removeEventListener('abort', stop);
      connection.abort();
    }
    if (signal?.aborted) return;
    const delayMs = retryDelay(context.policy, failures++, retryAfter);
    onStatus?.({ state: 'reconnecting', error: failure, delayMs, attempt: failures });
    await context.policy.sleep(delayMs, signal);
  }
}

/** Why a connection was opened again after the silence timer cut it. */
function silence(idleTimeoutMs: number): string {
  return `the event stream was silent for ${idleTimeoutMs} ms`;
}

/** The base URL without a trailing slash. */
function apiBase(context: Pick<FollowContext, 'baseUrl'>): string {
  return context.baseUrl.replace(/\/+$/, '');
}

/** The newest seq, from the feed's X-Events-Head: a 410 (the start of the log was pruned) carries it too. */
async function readHead(context: FollowContext, signal: AbortSignal): Promise<number> {
  const response = await context.fetch(new Request(`${apiBase(context)}/events?limit=1`, { headers: context.headers, signal }));
  const head = eventsHeadOf(response);
  if ((response.ok || response.status === 410) && head !== undefined) {
    // Read to the end (one event at most), not cancelled: a browser would count a cancelled answer as a failed request.
    await response.arrayBuffer().catch(() => undefined);
    return head;
  }
  if (response.ok) throw unexpectedAnswer(response, '', 'the answer has no X-Events-Head');
  throw await answerError(response);
}

/** The InventoryApiError of a non-2xx answer, from its body (the service's Error object, or whatever came instead). */
async function answerError(response: Response): Promise<InventoryApiError> {
  const text = await response.text().catch(() => '');
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // Not JSON: the text itself goes into the message.
  }
  return errorFromAnswer(response, body);
}

/**
 * The stream's messages as they arrive; a silence of idleTimeoutMs aborts the connection. Whatever
 * aborts the connection also cancels the body here, rather than relying on the fetch to pass the
 * Request's abort on to its body: a fetch that does not (a wrapper, a stand-in, a runtime's
 * quirk) would leave the read waiting forever, with no timer left to end it.
 */
async function* messages(response: Response, connection: AbortController, idleTimeoutMs: number) {
  if (!response.body) return;
  const reader: ReadableStreamDefaultReader<Uint8Array> = response.body.getReader();
  const cancel = () => void reader.cancel().catch(() => undefined);
  connection.signal.addEventListener('abort', cancel, { once: true });
  const decoder = new TextDecoder();
  const parser = new SseParser();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(() => connection.abort(), idleTimeoutMs);
  };
  try {
    arm();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      arm();
      yield* parser.push(decoder.decode(value, { stream: true }));
    }
  } finally {
    clearTimeout(timer);
    connection.signal.removeEventListener('abort', cancel);
    reader.releaseLock();
  }
}

/** An event's data: the wire JSON, petId a bigint from its digits. */
function parseEvent(response: Response, data: string): InventoryEvent {
  let event: unknown;
  try {
    event = parseJson(data);
  } catch {
    throw unexpectedAnswer(response, data, 'an event is not JSON');
  }
  if (typeof (event as { seq?: unknown } | null)?.seq !== 'number') throw unexpectedAnswer(response, data, 'an event has no seq');
  return event as InventoryEvent;
}

/** The head a reset names: {"head": <seq>}. */
function resetHead(response: Response, data: string): number {
  let head: unknown;
  try {
    head = (JSON.parse(data) as { head?: unknown }).head;
  } catch {
    // Said below.
  }
  if (typeof head !== 'number' || !Number.isSafeInteger(head) || head < 0) throw unexpectedAnswer(response, data, 'a reset names no head');
  return head;
}
