import { Type } from 'typebox';
import { ApiError } from '../errors.js';
import { PetId, petIdDescription } from '../schemas/inventory.js';
import type { ResponseSpec } from './operation.js';

/** The parts the operations on one entry (/v1/inventory/{petId}...) declare alike. */

export const PET_ID_PARAM = { petId: Type.Unsafe({ ...PetId, description: petIdDescription('The ID of the pet') }) };

export const ETAG_HEADER = {
  ETag: { description: 'Strong entity tag of the entry\'s version; send it in If-Match to update only that version', schema: Type.String(), required: true },
} satisfies ResponseSpec['headers'];

export const NOT_FOUND = { description: 'The pet has no inventory entry', errorCodes: ['not_found'] } as const satisfies ResponseSpec;

/** 404 for a pet without an inventory entry, with any headers its answer carries. */
export function notFound(petId: bigint, headers: Record<string, string> = {}): ApiError {
  return new ApiError('not_found', `Pet ${petId} has no inventory entry.`, headers);
}
