import { adjustInventory } from './adjust-inventory.js';
import { commitReservation } from './commit-reservation.js';
import { createReservation } from './create-reservation.js';
import { getReservation } from './get-reservation.js';
import { listReservations } from './list-reservations.js';
import { releaseReservation } from './release-reservation.js';
import { applyInventoryBatch } from './batch-inventory.js';
import { getCallingKey } from './get-calling-key.js';
import { getInventoryItem } from './get-inventory-item.js';
import type { Operation } from './handler.js';
import { listEvents } from './list-events.js';
import { listInventoryHistory } from './list-history.js';
import { listInventory } from './list-inventory.js';
import { listWebhooks } from './list-webhooks.js';
import { getOpenApiDocument } from './openapi-document.js';
import { streamEvents } from './stream-events.js';
import { updateInventory } from './update-inventory.js';

/**
 * Every operation of the API, the one list: the app registers each one's route from it, and the
 * OpenAPI document lists each one, its tags and its named schemas, in this order.
 */
export const OPERATIONS: readonly Operation[] = [listInventory, getInventoryItem, updateInventory, adjustInventory, applyInventoryBatch, listInventoryHistory, createReservation, listReservations, getReservation, commitReservation, releaseReservation, listEvents, streamEvents, getCallingKey, listWebhooks, getOpenApiDocument];
