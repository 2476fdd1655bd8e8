import { ApiError } from '../errors.js';

/** 404 for a pet without an inventory entry, with any headers its answer carries. */
export function notFound(petId: bigint, headers: Record<string, string> = {}): ApiError {
  return new ApiError('not_found', `Pet ${petId} has no inventory entry.`, headers);
}
