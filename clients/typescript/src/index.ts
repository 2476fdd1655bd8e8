// The package's public surface: the client, its error, and the types of what it returns.
export { createInventoryClient } from './client.js';
export type { BatchOptions, EventsOptions, HistoryOptions, InventoryClient, InventoryClientOptions, ReservationListOptions, UpdateOptions } from './client.js';
export type { FollowOptions, FollowStatus } from './events.js';
export { InventoryApiError, UNEXPECTED_RESPONSE } from './errors.js';
export type { InventoryErrorCode } from './errors.js';
export type { FetchLike, RetryOptions } from './retry.js';
export type {
  BatchChange,
  BatchItem,
  CallingKey,
  ChangeReason,
  EventPage,
  EventsReset,
  FollowedEvent,
  HistoryItem,
  HistoryPage,
  InventoryEvent,
  InventoryAdjustment,
  InventoryEventType,
  InventoryIfChanged,
  InventoryItem,
  InventoryUpdate,
  PetStatus,
  Reservation,
  ReservationPage,
  ReservationRequest,
  ReservationStatus,
  Scope,
  ServiceErrorCode,
  WebhookEndpoint,
  WebhookList,
} from './types.js';
