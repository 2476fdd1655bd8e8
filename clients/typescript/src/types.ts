import type { components } from './generated/openapi.js';

// Named aliases of the generated schemas, so callers never spell components["schemas"][...].

/** One pet's stock entry; petId is a bigint, exact over the whole int64 range. */
export type InventoryItem = components['schemas']['InventoryItem'];
/** The PATCH body: the new quantity and, optionally, why it changed. */
export type InventoryUpdate = components['schemas']['InventoryUpdate'];
export type PetStatus = components['schemas']['PetStatus'];
export type ChangeReason = components['schemas']['ChangeReason'];
/** One change of a pet's quantity, from its history. */
export type HistoryItem = components['schemas']['HistoryItem'];
/** One page of history, newest first; nextCursor is null on the last page. */
export type HistoryPage = components['schemas']['HistoryPage'];
/** What an API key may do: inventory:read (the GETs), inventory:write (GETs and updates). */
export type Scope = components['schemas']['Scope'];
/** The key making the call: id, name, scopes as stored, expiresAt (RFC 3339) or null; never the key itself. */
export type CallingKey = components['schemas']['CallingKey'];
/** The service's closed set of error codes. */
export type ServiceErrorCode = components['schemas']['Error']['code'];

/** listInventoryIfChanged's result: the list and its ETag, or only the ETag while the list is the one that ETag names. */
export type InventoryIfChanged = { changed: true; items: InventoryItem[]; etag: string } | { changed: false; etag: string };
