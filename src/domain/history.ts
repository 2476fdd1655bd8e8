import type { Static } from 'typebox';
import type { HistoryItem } from '../schemas/inventory.js';
import type { HistoryEntry } from '../store/store.js';

/** A history row as the API and the CLI show it, in the schema's field order; the row id stays internal (it is only the cursor). */
export function historyItem(e: HistoryEntry): Static<typeof HistoryItem> {
  return {
    petId: e.petId,
    previousQuantity: e.previousQuantity,
    quantity: e.quantity,
    at: e.at.toISOString(),
    keyId: e.keyId,
    keyName: e.keyName,
    requestId: e.requestId,
    reason: e.reason,
  };
}
