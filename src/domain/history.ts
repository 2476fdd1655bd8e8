import type { Static } from 'typebox';
import type { ChangeReason, HistoryItem } from '../schemas/inventory.js';

/** One row of an entry's change history, as the store keeps it. */
export interface HistoryEntry {
  /** Row id: increases with every change of the entry (the pagination cursor). */
  id: bigint;
  petId: bigint;
  previousQuantity: number;
  quantity: number;
  at: Date;
  keyId: string;
  keyName: string;
  requestId: string;
  reason: ChangeReason | null;
}

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
