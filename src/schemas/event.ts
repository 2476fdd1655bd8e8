import { Type, type Static } from 'typebox';
import { ChangeReason, PetId, PetStatus } from './inventory.js';
import { Nullable } from './nullable.js';
import { EVENT_TYPE_MEANINGS, EVENT_TYPES, QUANTITY_MAX, QUANTITY_MIN } from './values.js';

const Count = (description: string) =>
  Nullable(Type.Integer({ minimum: QUANTITY_MIN, maximum: QUANTITY_MAX }), { description });

/** One change of stock, as the feed, the stream and webhooks send it (extension: change events). */
export const InventoryEventSchema = Type.Object(
  {
    id: Type.String({ description: 'evt_ and the seq: the same event has the same id wherever it is delivered' }),
    seq: Type.Integer({ minimum: 1, description: 'Increases strictly in commit order and is never reused; gaps are allowed' }),
    type: Type.Unsafe<(typeof EVENT_TYPES)[number]>({
      type: 'string',
      enum: [...EVENT_TYPES],
      description: Object.entries(EVENT_TYPE_MEANINGS)
        .map(([type, meaning]) => `${type}: ${meaning}`)
        .join('; '),
    }),
    occurredAt: Type.String({ format: 'date-time', description: 'When the change was committed (RFC 3339, UTC)' }),
    data: Type.Object(
      {
        petId: PetId,
        status: PetStatus,
        previousQuantity: Count('The quantity before the change (for a retired entry, what it held: 0 unless retired by force); null when the entry appeared'),
        quantity: Count('The quantity after the change; null when the entry was retired'),
        version: Type.Integer({ minimum: 1, description: "The entry's version after the change, as in its ETag: a consumer drops an event older than what it holds" }),
        reason: Nullable(ChangeReason, { description: 'The reason sent with the change, or null' }),
        source: Type.Unsafe<'api' | 'cli'>({ type: 'string', enum: ['api', 'cli'], description: "api: a request; cli: the operator's command line" }),
        keyId: Nullable(Type.String(), { description: 'Id of the API key that made the change; null for the CLI' }),
        requestId: Nullable(Type.String(), { description: 'X-Request-Id of the request; null for the CLI' }),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);
export type InventoryEventBody = Static<typeof InventoryEventSchema>;

export const EventPageSchema = Type.Object(
  { items: Type.Array(InventoryEventSchema, { description: 'Events after the given seq, oldest first; empty when caught up' }) },
  { additionalProperties: false },
);
