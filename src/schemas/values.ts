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
} as const;
export const EVENT_TYPES = Object.keys(EVENT_TYPE_MEANINGS) as readonly (keyof typeof EVENT_TYPE_MEANINGS)[];

/** What an API key may do: inventory:read (the GET operations), inventory:write (GET and PATCH), webhooks:manage (GET /v1/webhooks). */
export const SCOPES = ['inventory:read', 'inventory:write', 'webhooks:manage'] as const;
