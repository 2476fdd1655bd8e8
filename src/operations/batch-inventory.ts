import { Type } from 'typebox';
import { availableOf, repeatedPet, type EntryChange } from '../domain/inventory.js';
import { INT64_MAX, INT64_MIN } from '../domain/pet-id.js';
import { ApiError, type ErrorCode } from '../errors.js';
import { stringifyJson } from '../json.js';
import { BatchChange, BatchChangeCheck, BatchErrorSchema, BatchResult, InventoryBatch, PetStatus, VersionedItem } from '../schemas/inventory.js';
import type { Changes } from '../store/store.js';
import { jsonAnswer, type Answer } from './answer.js';
import { BODY_SHAPE_ERROR_CODES, FIELD_ERROR_CODES, FIELD_MESSAGES, acceptedInput, validationToApiError, type AcceptedInput } from './validation.js';
import { JSON_MEDIA_TYPES } from './body.js';
import { REPLAYED_HEADER, changeOrigin, isKeyRefusal, keyRefusalError, type ChangeOptions, type ChangeRequest } from './change-request.js';
import { refusalError } from './change-refusal.js';
import { parseIfMatch } from './conditional.js';
import { IDEMPOTENCY_KEY_HEADER, KEY_REUSED, REPLAYED_RESPONSE_HEADER } from './item-parts.js';
import { operation } from './handler.js';
import { NoQuery, type BodyLimits } from './operation.js';
import { compileSchemaValidator } from './schema-validator.js';
import { INVENTORY_TAG } from './tags.js';

/** Bytes of body a batch may use per change: a change written out in full, with room to spare (decisions 5.12). */
export const BATCH_BYTES_PER_CHANGE = 256;

/** The body limit of the batch route: sized for its largest batch, never below BODY_LIMIT. */
export function batchBodyLimit(limits: BodyLimits): number {
  return Math.max(limits.batchMaxChanges * BATCH_BYTES_PER_CHANGE, limits.bodyLimit);
}

/** The codes a change of the batch can be refused with before the store (decisions 5.12); invalid_parameter (a bad ifMatch or Idempotency-Key) among them. */
const CHANGE_ERROR_CODES: readonly ErrorCode[] = [...new Set(Object.values(FIELD_ERROR_CODES))];

export const applyInventoryBatch = operation({
  operationId: 'applyInventoryBatch',
  method: 'POST',
  path: '/v1/inventory/batch',
  summary: 'Change several stock levels at once',
  description:
    'Applies up to BATCH_MAX_CHANGES (1,000 by default) changes all or nothing, in one transaction: each sets a count (quantity, as PATCH) ' +
    'or moves it (delta, as the adjustments), never both, optionally only if the entry is at the version ifMatch names, with an optional ' +
    'reason. Each pet at most once per batch. 200 answers every entry in the order of the changes, with its version; any refusal changes ' +
    'nothing and is the Error object of the first change that failed, with changes[i] in its message and its position as index.\n\n' +
    'Idempotency-Key covers the whole batch: its answer, applied or refused, is replayed as one. A batch counts toward the per-key rate ' +
    'limit as many requests as it has changes; its body may be up to 256 bytes per change (or the body limit, when larger).',
  tags: [INVENTORY_TAG],
  scope: 'inventory:write',
  requestHeaders: IDEMPOTENCY_KEY_HEADER,
  querystring: NoQuery,
  // The operation checks each change itself: a refusal names the change's index, which a schema check of the whole body cannot.
  body: { schema: InventoryBatch, contentTypes: JSON_MEDIA_TYPES, description: 'The changes, applied all or nothing', checkedByOperation: true },
  // Sized for the largest batch (decisions 5.12), never below BODY_LIMIT.
  bodyLimit: batchBodyLimit,
  errorSchema: { name: 'BatchError', schema: BatchErrorSchema },
  responses: {
    200: { description: 'Every change applied: the entries, in the order of the changes', schema: BatchResult, headers: REPLAYED_RESPONSE_HEADER },
    400: {
      description: 'The body or a change in it is invalid (index names the change), a petId appears twice, or changes is empty or too long; nothing changed',
      errorCodes: [...BODY_SHAPE_ERROR_CODES, ...CHANGE_ERROR_CODES],
    },
    404: { description: 'A change names a pet without an inventory entry (index names it); nothing changed', errorCodes: ['not_found'] },
    409: { description: 'A delta would take a count below 0 (index names the change, the message the count on hand); nothing changed', errorCodes: ['insufficient_stock'] },
    412: { description: 'A change\'s ifMatch named another version of its entry (index names it; the message, the current ETag); nothing changed', errorCodes: ['precondition_failed'] },
    422: KEY_REUSED,
    429: {
      description: 'Too many requests from this API key this minute (a batch counts as many as it has changes), too many failed authentications from this address, or too many idempotency records',
      errorCodes: ['rate_limited'],
    },
  },
  extensions: { 'x-extension': true },
  components: { InventoryBatch, BatchChange, BatchResult, VersionedItem, PetStatus },
}, ({ store, changeOptions, batchMaxChanges }) => (request) =>
  answerInventoryBatch(store.changes, request, { ...changeOptions, maxChanges: batchMaxChanges, chargeRequests: request.chargeRequests }),
);

/** A POST /v1/inventory/batch, whichever lane received it: the body as parsed, checked here. */
export interface BatchRequest extends ChangeRequest {
  body: unknown;
}

/** The settings a batch follows. */
export interface BatchOptions extends ChangeOptions {
  /** BATCH_MAX_CHANGES */
  maxChanges: number;
  /**
   * Takes `count` more requests from the caller's per-key rate limit (the pipeline took the
   * request's first), or answers the refusal when they do not fit; absent without a limit.
   */
  chargeRequests?: ((count: number) => Promise<ApiError | undefined>) | undefined;
}

const checkEnvelope = compileSchemaValidator({ schema: Type.Object({ changes: Type.Unknown() }, { additionalProperties: false }), httpPart: 'body' });
const checkChange = compileSchemaValidator({ schema: BatchChangeCheck, httpPart: 'body' });
const BATCH_ACCEPTS = acceptedInput(applyInventoryBatch);
const CHANGE_ACCEPTS: AcceptedInput = { query: {}, bodyFields: Object.keys(BatchChangeCheck.properties), requiredBodyFields: ['petId'] };

/**
 * Applies a batch of changes all or nothing (decisions 5.12): each change checked, by index, before
 * anything else; then the rest of the batch's requests taken from the rate limit; then the store,
 * under the batch's Idempotency-Key. Every refusal is thrown as an ApiError, with `index` when it
 * is about one change.
 */
export async function answerInventoryBatch(changes: Pick<Changes, 'applyBatch'>, request: BatchRequest, options: BatchOptions): Promise<Answer> {
  const entryChanges = readBatch(request.body, options.maxChanges);
  const refused = await options.chargeRequests?.(entryChanges.length - 1);
  if (refused) throw refused;
  const origin = changeOrigin(request, { operationId: applyInventoryBatch.operationId, target: '', body: request.body }, options.idempotencyRecordsPerKey);
  const result = await changes.applyBatch({ ...origin, changes: entryChanges });
  if (isKeyRefusal(result)) throw keyRefusalError(result, options.idempotencyRecordsPerKey);
  const replayed = result.replayed ? REPLAYED_HEADER : {};
  if (result.kind === 'refused') {
    // No ETag header: the answer is about the batch, not one entry; the message of a 412 names the entry's.
    throw refusalError(result.outcome, entryChanges[result.index]!).atChange(result.index, { ...replayed });
  }
  const items = result.entries.map(({ item, version }) => ({ ...item, reserved: item.reserved ?? 0, available: availableOf(item), version }));
  return jsonAnswer(200, stringifyJson({ items }), replayed);
}

/** The batch's changes as the store takes them, or the refusal of the body or of the first change that is not valid, by index. */
export function readBatch(body: unknown, maxChanges: number): EntryChange[] {
  const envelope = checkEnvelope(body);
  if (envelope.error) throw validationToApiError(envelope.error, 'body', body, BATCH_ACCEPTS);
  const given = (body as { changes: unknown }).changes;
  if (!Array.isArray(given) || given.length === 0 || given.length > maxChanges) {
    const got = Array.isArray(given) ? `${given.length} changes` : 'no array';
    throw new ApiError('invalid_body', `changes must be an array of 1 to ${maxChanges} changes; got ${got}.`);
  }
  const read = given.map((change, index) => {
    try {
      return readChange(change);
    } catch (err) {
      throw err instanceof ApiError ? err.atChange(index) : err;
    }
  });
  const repeat = repeatedPet(read);
  if (repeat >= 0) {
    const petId = read[repeat]!.petId;
    const first = read.findIndex((c) => c.petId === petId);
    throw new ApiError(
      'invalid_body',
      `Pet ${petId} is already changed by changes[${first}]: a batch changes each pet at most once; merge the two changes into one.`,
    ).atChange(repeat);
  }
  return read;
}

/** One change of a batch, checked: its fields, its petId (every digit), exactly one of quantity and delta, its ifMatch. */
function readChange(change: unknown): EntryChange {
  if (typeof change !== 'object' || change === null || Array.isArray(change)) {
    throw new ApiError('invalid_body', `A change must be a JSON object with petId and quantity or delta, not ${stringifyJson(change).slice(0, 40)}.`);
  }
  const checked = checkChange(change);
  if (checked.error) throw validationToApiError(checked.error, 'body', change, CHANGE_ACCEPTS);
  const fields = change as BatchChangeCheck;
  const petId = exactPetId(fields.petId);
  if (petId === undefined) {
    throw new ApiError('invalid_pet_id', `petId must be an integer from ${INT64_MIN} to ${INT64_MAX}; got ${stringifyJson(fields.petId).slice(0, 40)}.`);
  }
  if (fields.quantity !== undefined && fields.delta !== undefined) {
    throw new ApiError('invalid_body', 'A change sends quantity (the count to set) or delta (how much it moves), not both.');
  }
  if (fields.quantity === undefined && fields.delta === undefined) {
    throw new ApiError('missing_field', 'Missing field: a change sends quantity (the count to set) or delta (how much it moves).');
  }
  const count = fields.delta === undefined ? { quantity: fields.quantity! } : { delta: fields.delta };
  return { ...count, petId, condition: changeCondition(fields.ifMatch), reason: fields.reason ?? null };
}

/** A JSON integer in the int64 range as a bigint (a bigint already when beyond 2^53: the body parser kept its digits), else undefined. */
function exactPetId(value: unknown): bigint | undefined {
  if (typeof value === 'number') return Number.isSafeInteger(value) ? BigInt(value) : undefined;
  if (typeof value === 'bigint') return value >= INT64_MIN && value <= INT64_MAX ? value : undefined;
  return undefined;
}

/** A change's ifMatch as its store condition: one If-Match value, read as the header is. */
function changeCondition(ifMatch: string | undefined): EntryChange['condition'] {
  try {
    return parseIfMatch(ifMatch);
  } catch {
    throw new ApiError('invalid_parameter', `${FIELD_MESSAGES.ifMatch}; got ${stringifyJson(ifMatch).slice(0, 40)}.`);
  }
}
