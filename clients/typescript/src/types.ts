import type { components, paths } from './generated/openapi.js';

// Named aliases of the generated schemas, so callers never spell components["schemas"][...].

/** One pet's stock entry; petId is a bigint, exact over the whole int64 range. */
export type InventoryItem = components['schemas']['InventoryItem'];
/** The PATCH body: the new quantity and, optionally, why it changed. */
export type InventoryUpdate = components['schemas']['InventoryUpdate'];
/** The body of an adjustment: a non-zero delta (-1: one sold) and, optionally, why. */
export type InventoryAdjustment = NonNullable<paths['/inventory/{petId}/adjustments']['post']['requestBody']>['content']['application/json'];
/** One change of a batch: a pet and its new `quantity` or a `delta`, never both; optionally `ifMatch` (an ETag) and `reason`. */
export type BatchChange = NonNullable<paths['/inventory/batch']['post']['requestBody']>['content']['application/json']['changes'][number];
/** One entry a batch left, in the order the changes were sent, with its version (the number in its ETag). */
export type BatchItem = paths['/inventory/batch']['post']['responses'][200]['content']['application/json']['items'][number];
export type PetStatus = components['schemas']['PetStatus'];
/** Why a count changed; the document spells it out where it is used (a nullable reference is not in a form every reader takes). */
export type ChangeReason = NonNullable<components['schemas']['HistoryItem']['reason']>;
/** One change of a pet's quantity, from its history. */
export type HistoryItem = components['schemas']['HistoryItem'];
/** One page of history, newest first; nextCursor is null on the last page. */
export type HistoryPage = components['schemas']['HistoryPage'];
/** What an API key may do: inventory:read (the GETs), inventory:write (GETs and updates), webhooks:manage (listWebhooks). */
export type Scope = components['schemas']['Scope'];
/** The key making the call: id, name, scopes as stored, expiresAt (RFC 3339) or null; never the key itself. */
export type CallingKey = components['schemas']['CallingKey'];
/** One webhook endpoint: its URL, state, the seq delivered up to, the backlog and the last failure; never its secret. */
export type WebhookEndpoint = components['schemas']['WebhookEndpoint'];
/** Every webhook endpoint, oldest first, and the event log's head the backlogs count against. */
export type WebhookList = components['schemas']['WebhookList'];
/** Stock held for a checkout: its id, status (active, committed, released, expired), items, reference and times. */
export type Reservation = components['schemas']['Reservation'];
/** What POST /v1/reservations takes: items (petId and quantity each), and optionally ttlSeconds and reference. */
export type ReservationRequest = components['schemas']['ReservationRequest'];
/** One page of reservations, newest first; nextCursor is null on the last page. */
export type ReservationPage = components['schemas']['ReservationPage'];
export type ReservationStatus = components['schemas']['ReservationStatus'];
/** The service's closed set of error codes. */
export type ServiceErrorCode = components['schemas']['Error']['code'];

/** listInventoryIfChanged's result: the list and its ETag, or only the ETag while the list is the one that ETag names. */
export type InventoryIfChanged = { changed: true; items: InventoryItem[]; etag: string } | { changed: false; etag: string };

/**
 * One committed change of stock, as the feed and the stream send it: `seq` increases in commit
 * order, `data.petId` is an exact bigint, `data.version` is the entry's version after the change
 * (the number in its ETag), so an event older than what a consumer holds can be dropped.
 */
export type InventoryEvent = components['schemas']['InventoryEvent'];
/** What happened to an entry: it appeared (or came back), its quantity or status changed, it was retired. */
export type InventoryEventType = InventoryEvent['type'];

/** A page of the feed: the events after the position asked for, oldest first (empty when caught up), and the newest seq (X-Events-Head). */
export interface EventPage {
  items: InventoryEvent[];
  head: number;
}

/**
 * followEvents met a position the service no longer keeps (retention): events were lost to this
 * reader. It goes on from `head`; the reader reloads the list (listInventory), which holds them.
 */
export interface EventsReset {
  type: 'reset';
  head: number;
}

/** What followEvents yields: an event, or a reset. */
export type FollowedEvent = InventoryEvent | EventsReset;
