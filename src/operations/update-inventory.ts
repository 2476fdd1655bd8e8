import type { IncomingHttpHeaders } from 'node:http';
import { Type } from 'typebox';
import type { Principal } from '../domain/api-key.js';
import { etagOf, itemJson } from '../domain/inventory.js';
import { ApiError } from '../errors.js';
import { InventoryItem, InventoryUpdate, PetId, petIdDescription } from '../schemas/inventory.js';
import type { Changes } from '../store/store.js';
import { jsonAnswer, type Answer } from './answer.js';
import { JSON_MEDIA_TYPES } from './body.js';
import { parseIfMatch } from './conditional.js';
import { headerValue } from './header-value.js';
import { IDEMPOTENCY_TTL_MS, idempotencyRecordsFull, parseIdempotencyKey, requestFingerprint } from './idempotency.js';
import { ETAG_HEADER, NOT_FOUND, notFound } from './item-parts.js';
import { NoQuery, type OperationSpec } from './operation.js';

export const updateInventory = {
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
  tags: ['inventory'],
  scope: 'inventory:write',
  pathParams: { petId: Type.Unsafe({ ...PetId, description: petIdDescription('The ID of the pet whose stock is updated') }) },
  requestHeaders: {
    'If-Match': {
      description: 'Update only if the entry\'s ETag is one of these ("*": any existing entry). Required when the service runs with REQUIRE_IF_MATCH=true.',
      schema: Type.String(),
    },
    'Idempotency-Key': {
      description: 'A unique key per intended change (e.g. a UUID), 1 to 255 printable ASCII characters; a retry with the same key and body gets the first answer again',
      schema: Type.String({ minLength: 1, maxLength: 255 }),
    },
  },
  querystring: NoQuery,
  body: { schema: InventoryUpdate, contentTypes: JSON_MEDIA_TYPES, description: 'The new stock count' },
  responses: {
    200: {
      description: 'Update accepted: the updated entry',
      schema: InventoryItem,
      headers: {
        ...ETAG_HEADER,
        'Idempotent-Replayed': { description: '"true" when this is the stored answer to an earlier request with the same Idempotency-Key', schema: Type.String() },
      },
    },
    404: NOT_FOUND,
    412: {
      description: 'If-Match named another version of the entry; nothing changed. ETag holds the current version.',
      errorCodes: ['precondition_failed'],
      headers: ETAG_HEADER,
    },
    422: { description: 'The Idempotency-Key was used with a different request', errorCodes: ['idempotency_key_reused'] },
    428: { description: 'If-Match is required (REQUIRE_IF_MATCH=true) and was not sent', errorCodes: ['precondition_required'] },
  },
  contractStatuses: [200, 400, 401, 404],
  // x-scalar-stability: the docs page (Scalar) shows an "Experimental" badge beside the operation.
  extensions: { 'x-experimental': true, 'x-scalar-stability': 'experimental' },
} as const satisfies OperationSpec;

/** A PATCH /v1/inventory/{petId} whose path and body are valid, whichever lane received it. */
export interface UpdateRequest {
  petId: bigint;
  body: InventoryUpdate;
  headers: IncomingHttpHeaders;
  principal: Principal;
  requestId: string;
}

/** The settings a PATCH follows. */
export interface UpdateOptions {
  /** REQUIRE_IF_MATCH */
  requireIfMatch: boolean;
  /** IDEMPOTENCY_RECORDS_PER_KEY */
  idempotencyRecordsPerKey: number;
}

/** Marks a stored answer replayed for an Idempotency-Key, on success and error answers alike. */
export const REPLAYED_HEADER = { 'idempotent-replayed': 'true' } as const;

/**
 * Sets one pet's stock count: the headers' rules (If-Match, REQUIRE_IF_MATCH, Idempotency-Key),
 * then the store. Every refusal is thrown as an ApiError carrying its response headers.
 */
export async function answerUpdateInventory(
  changes: Pick<Changes, 'applyChange'>,
  request: UpdateRequest,
  options: UpdateOptions,
): Promise<Answer> {
  const { petId, body, principal } = request;
  const condition = parseIfMatch(headerValue(request, 'if-match'));
  if (!condition && options.requireIfMatch) {
    throw new ApiError('precondition_required', 'This service requires If-Match on PATCH: GET the entry, then send its ETag in If-Match.');
  }
  const idempotencyKey = parseIdempotencyKey(headerValue(request, 'idempotency-key'));
  const at = new Date();
  const result = await changes.applyChange({
    petId,
    quantity: body.quantity,
    condition,
    keyId: principal.keyId,
    keyName: principal.keyName,
    requestId: request.requestId,
    reason: body.reason ?? null,
    at,
    idempotency:
      idempotencyKey === undefined
        ? undefined
        : {
            key: idempotencyKey,
            // The operation is part of the fingerprint, so a key cannot cross operations.
            fingerprint: requestFingerprint(updateInventory.operationId, petId.toString(), body),
            expiresAt: new Date(at.getTime() + IDEMPOTENCY_TTL_MS),
            recordsPerKey: options.idempotencyRecordsPerKey,
          },
  });
  if (result.kind === 'idempotency_key_reused') throw new ApiError('idempotency_key_reused');
  if (result.kind === 'idempotency_records_full') throw idempotencyRecordsFull(options.idempotencyRecordsPerKey, result.retryAt);
  const replayed = result.replayed ? REPLAYED_HEADER : {};
  switch (result.kind) {
    case 'not_found':
      throw notFound(petId, replayed);
    case 'precondition_failed':
      throw new ApiError('precondition_failed', `The entry is at ${etagOf(result.entry.version)}, not the version If-Match names; GET it and retry.`, {
        etag: etagOf(result.entry.version),
        ...replayed,
      });
    case 'updated':
      return jsonAnswer(200, itemJson(result.entry.item), { ...replayed, etag: etagOf(result.entry.version) });
  }
}
