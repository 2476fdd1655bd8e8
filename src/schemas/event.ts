import { Type, type Static } from 'typebox';
import { ChangeReason, PetId, PetStatus } from './inventory.js';
import { Nullable } from './nullable.js';
import { ReservationItem, ReservationStatus } from './reservation.js';
import { EVENT_TYPE_MEANINGS, EVENT_TYPES, QUANTITY_MAX, QUANTITY_MIN } from './values.js';

const Count = (description: string) =>
  Nullable(Type.Integer({ minimum: QUANTITY_MIN, maximum: QUANTITY_MAX }), { description });

/** What an entry's event (inventory.*) says. */
const StockEventData = Type.Object(
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
    );

/** What a reservation's event (reservation.*) says (decisions 12.6): every pet it holds or held. */
const ReservationEventData = Type.Object(
  {
    reservationId: Type.String({ description: 'The reservation: res_ and 24 hex digits' }),
    status: ReservationStatus,
    items: Type.Array(ReservationItem, { description: 'Every pet it holds or held, and how many' }),
    reference: Nullable(Type.String(), { description: 'The reference sent with it, or null' }),
    expiresAt: Type.String({ format: 'date-time', description: 'When it stops holding anything unless committed or released first' }),
    source: Type.Unsafe<'api' | 'cli' | 'expiry'>({
      type: 'string',
      enum: ['api', 'cli', 'expiry'],
      description: "api: a request; cli: the operator's command line; expiry: the service, as its time ran out",
    }),
    keyId: Nullable(Type.String(), { description: 'Id of the API key that made the change; null for the CLI and an expiry' }),
    requestId: Nullable(Type.String(), { description: 'X-Request-Id of the request; null for the CLI and an expiry' }),
  },
  { additionalProperties: false },
);

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
    data: Type.Union([StockEventData, ReservationEventData], {
      // Both branches are objects; said here too, as the API reference's renderer refuses a schema with anyOf and no type.
      type: 'object',
      description: 'An entry\'s change (the inventory.* types) or a reservation\'s (the reservation.* types)',
    }),
  },
  { additionalProperties: false },
);
export type InventoryEventBody = Static<typeof InventoryEventSchema>;

export const EventPageSchema = Type.Object(
  { items: Type.Array(InventoryEventSchema, { description: 'Events after the given seq, oldest first; empty when caught up' }) },
  { additionalProperties: false },
);
