import type { Principal } from '../domain/api-key.js';
import { ApiError } from '../errors.js';
import { etagOf } from '../domain/inventory.js';
import { parseIfMatch } from '../http/conditional.js';
import { IDEMPOTENCY_TTL_MS, parseIdempotencyKey, requestFingerprint } from '../http/idempotency.js';
import type { InventoryItem, InventoryUpdate } from '../schemas/inventory.js';
import type { InventoryStore } from '../store/store.js';
import { notFound } from './not-found.js';

/** A validated PATCH /v1/inventory/{petId}, whichever lane (src/http/fast-lane.ts or Fastify) received it. */
export interface UpdateRequest {
  petId: bigint;
  body: InventoryUpdate;
  ifMatch: string | undefined;
  idempotencyKey: string | undefined;
  principal: Principal;
  requestId: string;
}

/** A successful update: the entry, its new ETag, and whether it is an idempotent replay. */
export interface UpdateAnswer {
  item: InventoryItem;
  etag: string;
  replayed: boolean;
}

/** The operation's id, part of every idempotency fingerprint (so keys cannot cross operations). */
export const UPDATE_OPERATION_ID = 'updateInventory';

/** Marks a stored answer replayed for an Idempotency-Key, on success and error answers alike. */
export const REPLAYED_HEADER = { 'idempotent-replayed': 'true' } as const;

/**
 * Sets one pet's stock count: the headers' rules (If-Match, REQUIRE_IF_MATCH, Idempotency-Key),
 * then the store. Every refusal is thrown as an ApiError carrying its response headers.
 */
export async function updateInventoryEntry(
  store: Pick<InventoryStore, 'applyChange'>,
  request: UpdateRequest,
  options: { requireIfMatch: boolean },
): Promise<UpdateAnswer> {
  const { petId, body, principal } = request;
  const condition = parseIfMatch(request.ifMatch);
  if (!condition && options.requireIfMatch) {
    throw new ApiError('precondition_required', 'This service requires If-Match on PATCH: GET the entry, then send its ETag in If-Match.');
  }
  const idempotencyKey = parseIdempotencyKey(request.idempotencyKey);
  const at = new Date();
  const result = await store.applyChange({
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
            fingerprint: requestFingerprint(UPDATE_OPERATION_ID, petId.toString(), body),
            expiresAt: new Date(at.getTime() + IDEMPOTENCY_TTL_MS),
          },
  });
  if (result.kind === 'idempotency_key_reused') throw new ApiError('idempotency_key_reused');
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
      return { item: result.entry.item, etag: etagOf(result.entry.version), replayed: result.replayed };
  }
}
