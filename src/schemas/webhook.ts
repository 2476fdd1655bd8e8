import { Type, type Static } from 'typebox';
import { Nullable } from './nullable.js';

const Time = (description: string) => Nullable(Type.String({ format: 'date-time' }), { description });
const Text = (description: string) => Nullable(Type.String(), { description });

/**
 * One webhook endpoint and where its delivery stands (extension: GET /v1/webhooks). Never its
 * signing secrets: they are shown once, by the CLI that makes them.
 */
export const WebhookEndpointSchema = Type.Object(
  {
    id: Type.String({ description: 'whk_ and 16 random bytes: the id the CLI\'s webhooks commands take' }),
    url: Type.String({ description: 'Where the events are POSTed' }),
    description: Text('What the operator wrote about it, or null'),
    enabled: Type.Boolean({ description: 'Whether events are delivered to it; a disabled endpoint keeps its place and resumes from it when enabled' }),
    disabledReason: Text('Why it was disabled (by an operator, a 410 Gone, every retry failed); null while enabled'),
    deliveredSeq: Type.Integer({ minimum: 0, description: 'Every event up to this seq was delivered; the next one sent is the first above it' }),
    backlog: Type.Integer({ minimum: 0, description: 'Events committed and not yet delivered to it: head minus deliveredSeq' }),
    maxInFlight: Type.Integer({
      minimum: 1,
      maximum: 100,
      description: 'Requests open to it at most: the events of one pet go in seq order, one at a time, different pets at once up to this; 1 is strict seq order',
    }),
    failures: Type.Integer({ minimum: 0, description: 'The most failed attempts in a row of any event waiting for its retry; 0 when none is' }),
    retrying: Type.Integer({ minimum: 0, description: 'Events waiting for a retry after a failure; each holds back only the later events of its own pet' }),
    nextAttemptAt: Time('Until when the whole endpoint waits (a Retry-After; with maxInFlight 1, any retry) (RFC 3339, UTC); null: it does not'),
    lastFailureAt: Time('When an attempt last failed (RFC 3339, UTC), kept after later deliveries; null when none ever failed'),
    lastFailure: Text('What went wrong then: HTTP and the status, or the network error; null when none'),
    createdAt: Type.String({ format: 'date-time', description: 'When it was added (RFC 3339, UTC)' }),
  },
  { additionalProperties: false },
);
export type WebhookEndpointBody = Static<typeof WebhookEndpointSchema>;

/** Every endpoint, oldest first, with the event log's head the backlogs are counted against. */
export const WebhookListSchema = Type.Object(
  {
    items: Type.Array(WebhookEndpointSchema, { description: 'Every webhook endpoint, oldest first' }),
    head: Type.Integer({ minimum: 0, description: 'The newest event seq, read after the endpoints: each backlog is head minus deliveredSeq' }),
  },
  { additionalProperties: false },
);
export type WebhookListBody = Static<typeof WebhookListSchema>;
