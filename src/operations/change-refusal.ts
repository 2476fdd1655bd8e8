import { etagOf, type ChangeRefusal, type CountChange } from '../domain/inventory.js';
import { ApiError } from '../errors.js';
import { QUANTITY_MAX } from '../schemas/values.js';
import { notFound } from './item-parts.js';

/**
 * A store's refusal of one change as the ApiError it is answered with: one mapping for PATCH,
 * adjustments and batches (decisions 5.5, 5.11, 5.12). `headers` are added to the answer's own
 * (Idempotent-Replayed on a replay).
 */
export function refusalError(refusal: ChangeRefusal, change: CountChange & { petId: bigint }, headers: Record<string, string> = {}): ApiError {
  switch (refusal.kind) {
    case 'not_found':
      return notFound(change.petId, headers);
    case 'precondition_failed': {
      const etag = etagOf(refusal.entry.version);
      return new ApiError('precondition_failed', `The entry is at ${etag}, not the version If-Match names; GET it and retry.`, { etag, ...headers });
    }
    case 'insufficient_stock': {
      const { quantity, reserved = 0 } = refusal.entry.item;
      const why =
        (change.delta ?? 0) + quantity < 0
          ? 'would take the count below 0'
          : `would take what is available below 0: reservations hold ${reserved} of them`;
      return new ApiError('insufficient_stock', `Pet ${change.petId} has ${quantity} on hand; a delta of ${change.delta} ${why}. Nothing changed.`, headers);
    }
    case 'quantity_out_of_range':
      return new ApiError(
        'invalid_quantity',
        `Pet ${change.petId} has ${refusal.entry.item.quantity} on hand; a delta of ${change.delta} would take the count above ${QUANTITY_MAX}. Nothing changed.`,
        headers,
      );
  }
}
