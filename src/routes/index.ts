import { listInventoryHistory } from './history.js';
import { getInventoryItem, listInventory, updateInventory } from './inventory.js';
import { getOpenApiDocument } from './openapi.js';
import type { OperationSpec } from './operation.js';

/** Every operation of the API; the OpenAPI document is built from this list. */
export const OPERATIONS: readonly OperationSpec[] = [listInventory, getInventoryItem, updateInventory, listInventoryHistory, getOpenApiDocument];
