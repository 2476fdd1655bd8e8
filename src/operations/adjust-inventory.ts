import { Type } from 'typebox';
import { InventoryAdjustment, InventoryItem, PetId, petIdDescription } from '../schemas/inventory.js';
import type { Changes } from '../store/store.js';
import type { Answer } from './answer.js';
import { JSON_MEDIA_TYPES } from './body.js';
import { answerOneChange, type ChangeOptions, type ChangeRequest } from './change-request.js';
import { operation } from './handler.js';
import { ETAG_HEADER, IDEMPOTENCY_KEY_HEADER, KEY_REUSED, NOT_FOUND, PRECONDITION_FAILED, REPLAYED_RESPONSE_HEADER } from './item-parts.js';
import { NoQuery } from './operation.js';
import { INVENTORY_TAG } from './tags.js';

export const adjustInventory = operation({
  operationId: 'adjustInventory',
  method: 'POST',
  path: '/v1/inventory/{petId}/adjustments',
  summary: 'Adjust stock level by a delta',
  description:
    'Moves one pet\'s stock count by a non-zero delta (-1 for a sale, +12 for an arrival), applied by the store to the count the entry ' +
    'holds when the change commits: two tills selling the same pet at once both apply, without reading first, If-Match or a retry. ' +
    'A delta that would take the count below 0 is 409 insufficient_stock, whose message names the count on hand; one that would take it ' +
    'above 2147483647 is 400 invalid_quantity. Nothing changes on a refusal. The status never changes.\n\n' +
    'If-Match (checked before the stock: 412 before 409) and Idempotency-Key work as on PATCH; REQUIRE_IF_MATCH does not apply. ' +
    'An applied adjustment is a change like a PATCH: a new version, a history row and an inventory.updated event.',
  tags: [INVENTORY_TAG],
  scope: 'inventory:write',
  pathParams: { petId: Type.Unsafe({ ...PetId, description: petIdDescription('The ID of the pet whose stock is adjusted') }) },
  requestHeaders: {
    'If-Match': {
      description: 'Adjust only if the entry\'s ETag is one of these ("*": any existing entry). Never required: a delta needs no read first.',
      schema: Type.String(),
    },
    ...IDEMPOTENCY_KEY_HEADER,
  },
  querystring: NoQuery,
  body: { schema: InventoryAdjustment, contentTypes: JSON_MEDIA_TYPES, description: 'How much the count moves, and why' },
  responses: {
    200: {
      description: 'Adjustment applied: the updated entry',
      schema: InventoryItem,
      headers: { ...ETAG_HEADER, ...REPLAYED_RESPONSE_HEADER },
    },
    404: NOT_FOUND,
    409: { description: 'The delta would take the count below 0; the message names the count on hand, and nothing changed', errorCodes: ['insufficient_stock'] },
    412: PRECONDITION_FAILED,
    422: KEY_REUSED,
  },
  extensions: { 'x-extension': true },
  components: { InventoryAdjustment },
}, ({ store, changeOptions }) => (request) => answerAdjustInventory(store.changes, request, changeOptions));

/** A POST /v1/inventory/{petId}/adjustments whose path and body are valid, whichever lane received it. */
export interface AdjustRequest extends ChangeRequest {
  petId: bigint;
  body: InventoryAdjustment;
}

/**
 * Moves one pet's stock count by the body's delta, in the store (decisions 5.11): If-Match and
 * Idempotency-Key as on PATCH; REQUIRE_IF_MATCH does not apply, since a delta needs no read first.
 */
// Not async: the promise of answerOneChange is returned as it is, without wrapping it in one more.
export function answerAdjustInventory(changes: Pick<Changes, 'applyChange'>, request: AdjustRequest, options: ChangeOptions): Promise<Answer> {
  const { petId, body } = request;
  return answerOneChange(
    changes,
    request,
    { operationId: adjustInventory.operationId, method: 'POST', petId, count: { delta: body.delta }, reason: body.reason, body, ifMatchRequirable: false },
    options,
  );
}
