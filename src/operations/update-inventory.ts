import { Type } from 'typebox';
import { InventoryItem, InventoryUpdate, PetId, petIdDescription } from '../schemas/inventory.js';
import type { Changes } from '../store/store.js';
import type { Answer } from './answer.js';
import { JSON_MEDIA_TYPES } from './body.js';
import { answerOneChange, type ChangeOptions, type ChangeRequest } from './change-request.js';
import { operation } from './handler.js';
import { ETAG_HEADER, IDEMPOTENCY_KEY_HEADER, KEY_REUSED, NOT_FOUND, PRECONDITION_FAILED, REPLAYED_RESPONSE_HEADER } from './item-parts.js';
import { NoQuery } from './operation.js';
import { INVENTORY_TAG } from './tags.js';

export const updateInventory = operation({
  operationId: 'updateInventory',
  method: 'PATCH',
  path: '/v1/inventory/{petId}',
  summary: 'Update stock level',
  description:
    'Sets the stock quantity for one pet (new arrivals, returns, manual adjustments). The entry must exist; its status never changes. ' +
    'Experimental: the request shape may change before it becomes stable.\n\n' +
    'Extensions: If-Match makes the update conditional on the entry\'s version (412 when it changed); Idempotency-Key makes a retry ' +
    'safe (the first answer is replayed for 24 hours, with Idempotent-Replayed: true; an API key holding the most records it may ' +
    'gets 429 for a new key, with Retry-After until its oldest one expires); the optional body field reason is kept in the ' +
    'change history.',
  tags: [INVENTORY_TAG],
  scope: 'inventory:write',
  pathParams: { petId: Type.Unsafe({ ...PetId, description: petIdDescription('The ID of the pet whose stock is updated') }) },
  requestHeaders: {
    'If-Match': {
      description: 'Update only if the entry\'s ETag is one of these ("*": any existing entry). Required when the service runs with REQUIRE_IF_MATCH=true.',
      schema: Type.String(),
    },
    ...IDEMPOTENCY_KEY_HEADER,
  },
  querystring: NoQuery,
  body: { schema: InventoryUpdate, contentTypes: JSON_MEDIA_TYPES, description: 'The new stock count' },
  responses: {
    200: {
      description: 'Update accepted: the updated entry',
      schema: InventoryItem,
      headers: { ...ETAG_HEADER, ...REPLAYED_RESPONSE_HEADER },
    },
    404: NOT_FOUND,
    412: PRECONDITION_FAILED,
    422: KEY_REUSED,
    428: { description: 'If-Match is required (REQUIRE_IF_MATCH=true) and was not sent', errorCodes: ['precondition_required'] },
  },
  contractStatuses: [200, 400, 401, 404],
  // x-scalar-stability: the docs page (Scalar) shows an "Experimental" badge beside the operation.
  extensions: { 'x-experimental': true, 'x-scalar-stability': 'experimental' },
  components: { InventoryUpdate },
}, ({ store, changeOptions }) => (request) => answerUpdateInventory(store.changes, request, changeOptions));

/** A PATCH /v1/inventory/{petId} whose path and body are valid, whichever lane received it. */
export interface UpdateRequest extends ChangeRequest {
  petId: bigint;
  body: InventoryUpdate;
}

/** The settings a PATCH follows. */
export type UpdateOptions = ChangeOptions;

/**
 * Sets one pet's stock count: the headers' rules (If-Match, REQUIRE_IF_MATCH, Idempotency-Key),
 * then the store. Every refusal is thrown as an ApiError carrying its response headers.
 */
// Not async: the promise of answerOneChange is returned as it is, without wrapping it in one more.
export function answerUpdateInventory(
  changes: Pick<Changes, 'applyChange'>,
  request: UpdateRequest,
  options: UpdateOptions,
): Promise<Answer> {
  const { petId, body } = request;
  return answerOneChange(
    changes,
    request,
    { operationId: updateInventory.operationId, method: 'PATCH', petId, count: { quantity: body.quantity }, reason: body.reason, body, ifMatchRequirable: true },
    options,
  );
}
