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
/** The service's closed set of error codes. */
export type ServiceErrorCode = components['schemas']['Error']['code'];
