import { Type, type Static } from 'typebox';
import { eventJson } from '../domain/event.js';
import { ApiError } from '../errors.js';
import { EventPageSchema, InventoryEventSchema } from '../schemas/event.js';
import type { Events } from '../store/store.js';
import { jsonAnswer, type Answer } from './answer.js';
import { operation } from './handler.js';
import { INVENTORY_TAG } from './tags.js';
import { invalidQueryParameter } from './validation.js';

export const EVENTS_LIMIT_MAX = 1000;
export const EVENTS_LIMIT_DEFAULT = 100;
/** The newest seq a JSON number carries exactly: the largest `after` accepted. */
export const SEQ_MAX = Number.MAX_SAFE_INTEGER;

/** X-Events-Head: the newest seq, on every feed answer (the 410 too) and on the list. */
export const EVENTS_HEAD_HEADER = 'x-events-head';

/** How X-Events-Head is documented, wherever an answer carries it. */
export const EVENTS_HEAD_DOC = {
  description: 'The newest event seq, read with the answer: follow GET /v1/events?after=<it> (or the stream) from here, without a gap or a double',
  schema: Type.String({ pattern: '^(0|[1-9][0-9]*)$' }),
  required: true,
};

/** `after` as a decimal string: conversion to an integer would quietly truncate 2.5 to 2. */
/** A seq as text: 0, or up to 16 digits without a leading zero (SEQ_MAX bounds it further). */
const SEQ_PATTERN = '^(0|[1-9][0-9]{0,15})$';
const SEQ_TEXT = new RegExp(SEQ_PATTERN);

export const AfterParam = Type.String({
  pattern: SEQ_PATTERN,
  description: 'Only events with a seq above this one (default 0: from the oldest kept)',
});

const EventsQuery = Type.Object(
  {
    after: Type.Optional(AfterParam),
    limit: Type.Optional(
      Type.String({ pattern: '^(1000|[1-9][0-9]{0,2})$', description: `Events per page, 1 to ${EVENTS_LIMIT_MAX} (default ${EVENTS_LIMIT_DEFAULT})` }),
    ),
  },
  { additionalProperties: false },
);

/** What `after` accepts, in the words its refusal says. */
export const AFTER_ACCEPTS = `a seq: an integer from 0 to ${SEQ_MAX}`;

/** What each query parameter accepts, in the words its refusal says. */
const EVENTS_QUERY_ACCEPTS = {
  after: AFTER_ACCEPTS,
  limit: `an integer from 1 to ${EVENTS_LIMIT_MAX}`,
} as const satisfies Record<keyof Static<typeof EventsQuery>, string>;

export const listEvents = operation({
  operationId: 'listEvents',
  method: 'GET',
  path: '/v1/events',
  summary: 'Changes of stock, oldest first',
  description:
    'Every committed change of an entry (created, quantity or status updated, deleted), in commit order: the events with a seq above `after`, ' +
    'oldest first; an empty page means caught up. To follow the stock: load GET /v1/inventory, note its X-Events-Head, then ask for the events ' +
    'after it, and after the last seq of each page. Events older than the retention are pruned: 410 events_pruned then says to reload the list; ' +
    'an `after` beyond the newest event (the store was rebuilt) is 409 events_beyond_head, which says the same.',
  tags: [INVENTORY_TAG],
  scope: 'inventory:read',
  querystring: EventsQuery,
  queryAccepts: EVENTS_QUERY_ACCEPTS,
  responses: {
    200: { description: 'One page of events, oldest first', schema: EventPageSchema, headers: { 'X-Events-Head': EVENTS_HEAD_DOC } },
    409: {
      description: '`after` is beyond the newest event (the store was rebuilt, or the seq is from another store): reload the list and follow from the seq in X-Events-Head',
      errorCodes: ['events_beyond_head'],
      headers: { 'X-Events-Head': EVENTS_HEAD_DOC },
    },
    410: {
      description: 'Events after `after` were pruned: reload the list and follow from the seq in X-Events-Head',
      errorCodes: ['events_pruned'],
      headers: { 'X-Events-Head': EVENTS_HEAD_DOC },
    },
  },
  extensions: { 'x-extension': true },
  components: { InventoryEvent: InventoryEventSchema, EventPage: EventPageSchema },
}, ({ store }) => (request) => answerListEvents(store.events, request));

/** A seq given as text (the query's `after`, Last-Event-ID): undefined when it is not one. */
export function parseSeq(text: string): number | undefined {
  if (!SEQ_TEXT.test(text)) return undefined;
  const seq = Number(text);
  return seq <= SEQ_MAX ? seq : undefined;
}

/** The refusal of an `after` past the largest seq. */
export function invalidAfter(): ApiError {
  return invalidQueryParameter('after', AFTER_ACCEPTS);
}

/** The 410 for a position whose events were pruned, with the head to follow from. */
export function eventsPruned(head: number): ApiError {
  return new ApiError('events_pruned', undefined, { [EVENTS_HEAD_HEADER]: String(head) });
}

/**
 * The 409 for a position beyond the log's head: no event has that seq yet, and waiting would not
 * help (the store was rebuilt, or the seq is another store's); the head to follow from.
 */
export function eventsBeyondHead(after: number, head: number): ApiError {
  return new ApiError(
    'events_beyond_head',
    `No event has seq ${after}: the newest is ${head} (the store was rebuilt, or the seq is from another store). Reload the list, then follow the events after ${head}.`,
    { [EVENTS_HEAD_HEADER]: String(head) },
  );
}

/** GET /v1/events: one page of events after `after`, oldest first, with the head read in the same read. */
export async function answerListEvents(events: Pick<Events, 'readEvents'>, request: { query: Static<typeof EventsQuery> }): Promise<Answer> {
  const after = request.query.after === undefined ? 0 : parseSeq(request.query.after);
  if (after === undefined) throw invalidAfter();
  const limit = request.query.limit === undefined ? EVENTS_LIMIT_DEFAULT : Number(request.query.limit);
  const page = await events.readEvents(after, limit);
  if (page.pruned) throw eventsPruned(page.head);
  if (after > page.head) throw eventsBeyondHead(after, page.head);
  let body = '{"items":[';
  for (let i = 0; i < page.items.length; i++) body += (i === 0 ? '' : ',') + eventJson(page.items[i]!);
  body += ']}';
  return jsonAnswer(200, body, { [EVENTS_HEAD_HEADER]: String(page.head) });
}
