import { adjustInventory } from './adjust-inventory.js';
import { applyInventoryBatch } from './batch-inventory.js';
import { getCallingKey } from './get-calling-key.js';
import { getInventoryItem } from './get-inventory-item.js';
import { listEvents } from './list-events.js';
import { listInventoryHistory } from './list-history.js';
import { listInventory } from './list-inventory.js';
import { listWebhooks } from './list-webhooks.js';
import { getOpenApiDocument } from './openapi-document.js';
import type { OperationSpec } from './operation.js';
import { streamEvents } from './stream-events.js';
import { updateInventory } from './update-inventory.js';

/** Every operation of the API; the OpenAPI document is built from this list. */
export const OPERATIONS: readonly OperationSpec[] = [listInventory, getInventoryItem, updateInventory, adjustInventory, applyInventoryBatch, listInventoryHistory, listEvents, streamEvents, getCallingKey, listWebhooks, getOpenApiDocument];
