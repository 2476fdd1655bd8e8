import { Type } from 'typebox';
import { ApiError } from '../errors.js';
import { PetId, petIdDescription } from '../schemas/inventory.js';
import type { OperationSpec, ResponseSpec } from './operation.js';

/** The parts the operations on one entry (/v1/inventory/{petId}...) declare alike. */

export const PET_ID_PARAM = { petId: Type.Unsafe({ ...PetId, description: petIdDescription('The ID of the pet') }) };

export const ETAG_HEADER = {
  ETag: { description: 'Strong entity tag of the entry\'s version; send it in If-Match to update only that version', schema: Type.String(), required: true },
} satisfies ResponseSpec['headers'];

/** The request header of the operations that change counts: safe retries. */
export const IDEMPOTENCY_KEY_HEADER = {
  'Idempotency-Key': {
    description: 'A unique key per intended change (e.g. a UUID), 1 to 255 printable ASCII characters; a retry with the same key and body gets the first answer again',
    schema: Type.String({ minLength: 1, maxLength: 255 }),
  },
} satisfies OperationSpec['requestHeaders'];

/** The answer header that marks a replay of an Idempotency-Key's stored answer. */
export const REPLAYED_RESPONSE_HEADER = {
  'Idempotent-Replayed': { description: '"true" when this is the stored answer to an earlier request with the same Idempotency-Key', schema: Type.String() },
} satisfies ResponseSpec['headers'];

/** 422 of the operations that take an Idempotency-Key. */
export const KEY_REUSED = { description: 'The Idempotency-Key was used with a different request', errorCodes: ['idempotency_key_reused'] } as const satisfies ResponseSpec;

export const NOT_FOUND = { description: 'The pet has no inventory entry', errorCodes: ['not_found'] } as const satisfies ResponseSpec;

/** 412 for an If-Match that names another version of the entry: the answer carries its current ETag. */
export const PRECONDITION_FAILED = {
  description: 'If-Match named another version of the entry; nothing changed. ETag holds the current version.',
  errorCodes: ['precondition_failed'],
  headers: ETAG_HEADER,
} as const satisfies ResponseSpec;

/** 404 for a pet without an inventory entry, with any headers its answer carries. */
export function notFound(petId: bigint, headers: Record<string, string> = {}): ApiError {
  return new ApiError('not_found', `Pet ${petId} has no inventory entry.`, headers);
}
