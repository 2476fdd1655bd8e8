import type { IncomingHttpHeaders } from 'node:http';
import { Type, type Static } from 'typebox';
import { ApiError } from '../errors.js';
import type { Events } from '../store/store.js';
import { operation, type EventStreamPort, type HeldAnswer } from './handler.js';
import { headerValue } from './header-value.js';
import { AFTER_ACCEPTS, AfterParam, EVENTS_HEAD_DOC, EVENTS_HEAD_HEADER, invalidAfter, parseSeq, SEQ_MAX } from './list-events.js';
import { INVENTORY_TAG } from './tags.js';

export const EVENT_STREAM_CONTENT_TYPE = 'text/event-stream; charset=utf-8';

const StreamQuery = Type.Object({ after: Type.Optional(AfterParam) }, { additionalProperties: false });

export const streamEvents = operation({
  operationId: 'streamEvents',
  method: 'GET',
  path: '/v1/events/stream',
  summary: 'Changes of stock as they happen (Server-Sent Events)',
  description:
    'The events of GET /v1/events as a Server-Sent Events stream: each as `id: <seq>`, `event: <type>`, `data: <the event JSON>`. ' +
    'It starts after Last-Event-ID, else after `after`, else at the head; replays what was missed, then sends each change as it commits, ' +
    'on every instance. A comment line every 15 s keeps it open through proxies. When the position was pruned, or is beyond the newest ' +
    'event (the store was rebuilt), it sends `event: reset` with data {"head": <seq>}: reload the list, then the stream goes on after that seq. When the service shuts down the stream ends: ' +
    'reconnect with Last-Event-ID. Send the key in the Authorization header (fetch, not a browser EventSource, which cannot).',
  tags: [INVENTORY_TAG],
  scope: 'inventory:read',
  querystring: StreamQuery,
  queryAccepts: { after: AFTER_ACCEPTS } satisfies Record<keyof Static<typeof StreamQuery>, string>,
  requestHeaders: {
    'Last-Event-ID': { description: 'The id of the last event received (its seq): the stream resumes after it, and wins over `after`', schema: Type.String() },
  },
  responses: {
    200: {
      description: 'The stream of events, oldest first, open until the client leaves, the service shuts down, or the client reads too slowly',
      contentType: 'text/event-stream',
      schema: Type.String({ description: 'id: <seq>, event: <type>, data: <an InventoryEvent as JSON>, a blank line; `: keep-alive` comments; event: reset with data {"head": <seq>}' }),
      headers: { 'X-Events-Head': { ...EVENTS_HEAD_DOC, description: 'The newest event seq when the stream opened' } },
    },
  },
  extensions: { 'x-extension': true },
}, ({ store, eventStreams }) => (request) => answerStreamEvents(store.events, eventStreams, request));

/** Where a stream starts: after Last-Event-ID, else after `after`, else undefined (at the head). A bad one is 400. */
export function streamStart(request: { headers: IncomingHttpHeaders; query: Static<typeof StreamQuery> }): number | undefined {
  const lastEventId = headerValue(request, 'last-event-id');
  if (lastEventId !== undefined) {
    const seq = parseSeq(lastEventId.trim());
    if (seq === undefined) throw new ApiError('invalid_parameter', `Last-Event-ID must be the id of an event this stream sent: an integer from 0 to ${SEQ_MAX}.`);
    return seq;
  }
  if (request.query.after === undefined) return undefined;
  const seq = parseSeq(request.query.after);
  if (seq === undefined) throw invalidAfter();
  return seq;
}

/**
 * GET /v1/events/stream: where the stream starts (a bad start is 400), a stream admitted, the log's
 * head read; then the stream, held open, from there.
 */
export async function answerStreamEvents(
  events: Pick<Events, 'head'>,
  streams: EventStreamPort,
  request: { headers: IncomingHttpHeaders; query: Static<typeof StreamQuery> },
): Promise<HeldAnswer> {
  const start = streamStart(request);
  streams.admit();
  const head = await events.head();
  const headers = {
    'content-type': EVENT_STREAM_CONTENT_TYPE,
    'cache-control': 'no-store',
    // Proxies that buffer answers (nginx) would hold the events back.
    'x-accel-buffering': 'no',
    [EVENTS_HEAD_HEADER]: String(head),
  };
  return { status: 200, headers, hold: (res, all) => streams.hold(res, all, start ?? head) };
}
