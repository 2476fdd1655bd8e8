import { Type, type Static } from 'typebox';
import { ErrorSchema, PetId, petIdDescription } from './inventory.js';
import { Nullable } from './nullable.js';
import { QUANTITY_MAX, RESERVATION_REFERENCE_MAX, RESERVATION_STATUSES, RESERVATION_TTL_MAX, RESERVATION_TTL_MIN } from './values.js';

export const ReservationStatus = Type.Unsafe<(typeof RESERVATION_STATUSES)[number]>({
  type: 'string',
  enum: [...RESERVATION_STATUSES],
  description: 'active: it holds its items; committed: sold; released: given up; expired: its time ran out unsold. Only active ever changes.',
});

/** One pet a reservation holds. */
export const ReservationItem = Type.Object(
  {
    petId: Type.Unsafe<bigint>({ ...PetId, description: petIdDescription('The pet held') }),
    quantity: Type.Integer({ minimum: 1, maximum: QUANTITY_MAX, description: `How many of it are held: 1 to ${QUANTITY_MAX}` }),
  },
  { additionalProperties: false },
);

/** The body of POST /v1/reservations; its item count is RESERVATION_MAX_ITEMS, a setting, checked by the operation. */
export const ReservationRequest = Type.Object(
  {
    items: Type.Array(ReservationItem, { minItems: 1, description: 'The pets to hold, each once: 1 to RESERVATION_MAX_ITEMS (100 by default)' }),
    ttlSeconds: Type.Optional(
      Type.Integer({
        minimum: RESERVATION_TTL_MIN,
        maximum: RESERVATION_TTL_MAX,
        description: `How long the stock is held, ${RESERVATION_TTL_MIN} to ${RESERVATION_TTL_MAX} seconds (default RESERVATION_TTL_SECONDS, 900)`,
      }),
    ),
    reference: Type.Optional(Type.String({ maxLength: RESERVATION_REFERENCE_MAX, description: `The shop's own reference (an order number), at most ${RESERVATION_REFERENCE_MAX} characters` })),
  },
  { additionalProperties: false },
);
export type ReservationRequest = Static<typeof ReservationRequest>;

/** What the operation checks each item against: petId to its own check, which keeps every digit. */
export const ReservationItemCheck = Type.Object({ petId: Type.Unknown(), quantity: ReservationItem.properties.quantity }, { additionalProperties: false });

export const Reservation = Type.Object(
  {
    id: Type.String({ description: 'res_ and 24 hex digits' }),
    status: ReservationStatus,
    items: Type.Array(ReservationItem, { description: 'What it holds (or held), in the order asked' }),
    reference: Nullable(Type.String(), { description: 'The reference sent with it, or null' }),
    createdAt: Type.String({ format: 'date-time', description: 'When it was made (RFC 3339, UTC, the store\'s clock)' }),
    expiresAt: Type.String({ format: 'date-time', description: 'When it stops holding anything unless committed or released first' }),
  },
  { additionalProperties: false },
);

export const ReservationPage = Type.Object(
  {
    items: Type.Array(Reservation, { description: 'Reservations, newest first' }),
    nextCursor: Nullable(Type.String(), { description: 'Pass as cursor for the next (older) page; null on the last page' }),
  },
  { additionalProperties: false },
);

/** A reservation's Error object: the spec's, with the index of the item refused when one is. */
export const ReservationErrorSchema = Type.Object(
  {
    ...ErrorSchema.properties,
    index: Type.Optional(Type.Integer({ minimum: 0, description: 'The position in items of the item refused; absent when the refusal is not about one item' })),
  },
  { additionalProperties: false },
);
