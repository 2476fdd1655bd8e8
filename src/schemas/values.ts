/**
 * The enumerations and bounds of the wire format, without TypeBox: the schemas are built from
 * them, and the CLI checks its input with them without loading TypeBox (a third of a second).
 */

/** Status of the pet (spec: PetStatus). */
export const PET_STATUSES = ['available', 'pending', 'sold'] as const;

/** A stock count is a JSON integer in this range: never negative, and within a 32-bit signed integer. */
export const QUANTITY_MIN = 0;
export const QUANTITY_MAX = 2147483647;

/** An adjustment's delta (decisions 5.11): a non-zero integer, within a count's reach either way. */
export const DELTA_MIN = -QUANTITY_MAX;
export const DELTA_MAX = QUANTITY_MAX;

/**
 * Why a count changed: the spec's own purposes of the update operation (new arrivals, returns,
 * manual adjustments), then sales and write-offs (decisions 3.8).
 */
export const CHANGE_REASONS = ['received', 'returned', 'correction', 'sold', 'damaged'] as const;

/**
 * What happened to an entry, as a change event's type, with what each means (the schema's
 * description): the one list of them. A new type is a line here, a kind of write that appends it
 * (domain/write-kinds.ts) and a migration of each backend's CHECK on inventory_events.type.
 */
export const EVENT_TYPE_MEANINGS = {
  'inventory.created': 'an entry appeared',
  'inventory.updated': 'its quantity or status changed',
  'inventory.deleted': 'it was retired',
  'reservation.created': 'stock was held for a checkout (data names the reservation and every pet it holds)',
  'reservation.committed': 'a reservation was sold: each pet it held has its own inventory.updated (reason sold) before this event',
  'reservation.released': 'a reservation was given up: its pets are available again',
  'reservation.expired': 'a reservation passed its expiresAt unsold: its pets are available again',
} as const;
export const EVENT_TYPES = Object.keys(EVENT_TYPE_MEANINGS) as readonly (keyof typeof EVENT_TYPE_MEANINGS)[];

/**
 * What an API key may do: inventory:read (the GET operations), inventory:write (GET and PATCH, and reservations),
 * webhooks:manage (GET /v1/webhooks), reservations:write (reservations and reading stock, no change of a count).
 */
export const SCOPES = ['inventory:read', 'inventory:write', 'webhooks:manage', 'reservations:write'] as const;

/** Where a reservation stands: active holds its items; the other three hold nothing and never change again. */
export const RESERVATION_STATUSES = ['active', 'committed', 'released', 'expired'] as const;
/** A reservation's time to live, in seconds. */
export const RESERVATION_TTL_MIN = 1;
export const RESERVATION_TTL_MAX = 86_400;
/** The longest `reference` a reservation keeps (a shop's order number). */
export const RESERVATION_REFERENCE_MAX = 200;
