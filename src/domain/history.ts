import type { Static } from 'typebox';
import type { ChangeReason, HistoryItem } from '../schemas/inventory.js';
import { INT64_MAX } from './pet-id.js';

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

/** Cursors are opaque to clients: a prefix and the last row id, so they can change form later. */
const CURSOR = /^h([1-9][0-9]{0,18})$/;

/** The row id a cursor names; undefined for anything never issued (19 digits can exceed an int64 row id, which the store could not bind). */
export function parseHistoryCursor(cursor: string): bigint | undefined {
  const match = CURSOR.exec(cursor);
  const rowId = match ? BigInt(match[1]!) : undefined;
  return rowId !== undefined && rowId <= INT64_MAX ? rowId : undefined;
}

/** A page out of rows read with one more than `limit` (that row tells whether an older page follows): its rows and the next page's cursor. */
export function historyPageOf(rows: readonly HistoryEntry[], limit: number): { rows: HistoryEntry[]; nextCursor: string | null } {
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return { rows: page, nextCursor: rows.length > limit && last ? `h${last.id}` : null };
}
