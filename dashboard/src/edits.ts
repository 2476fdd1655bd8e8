import type { ChangeReason } from '@petstore/inventory-client';
import { MAX_QUANTITY } from './inventory-model.js';

export const REASONS = ['received', 'returned', 'correction', 'sold', 'damaged'] as const satisfies readonly ChangeReason[];

/** What stops an edit, shown beside its fields. */
export interface Problem {
  /** The sentence shown and read out. */
  message: string;
  /** The field at fault (marked invalid), or null when the save as a whole failed. */
  field: 'quantity' | 'delta' | null;
}

/** One row being edited. It lives outside the row, so scrolling the row away and back, or a refresh, keeps it. */
export interface Edit {
  petId: bigint;
  /** The quantity of the version being edited, and that version's ETag (null while it is read). */
  base: number;
  etag: string | null;
  /** What the fields hold, as typed. */
  quantity: string;
  delta: string;
  reason: ChangeReason;
  saving: boolean;
  /** The Idempotency-Key of the last save tried, and what it was for: the same save again (a retry after a lost answer) reuses it. */
  attempt: { key: string; of: string } | null;
  /** Set when the entry changed under the edit: its current quantity and version. */
  conflict: { theirs: number; etag: string } | null;
  /** The user typed a quantity (not through add-or-remove): a newer version read later keeps it. */
  typed: boolean;
  /** Why the last save did not happen: what was typed, or what the service or the network said. */
  problem: Problem | null;
}

export function newEdit(petId: bigint, quantity: number): Edit {
  return { petId, base: quantity, etag: null, quantity: String(quantity), delta: '', reason: 'correction', saving: false, attempt: null, conflict: null, typed: false, problem: null };
}

/**
 * The edit moved onto a version read from the service: an add-or-remove is worked out again from
 * its quantity, an untouched quantity becomes it, a typed one stays as typed.
 */
export function rebase(edit: Edit, quantity: number, etag: string): Edit {
  const delta = deltaOf(edit);
  const target = delta !== null ? String(quantity + delta) : edit.typed ? edit.quantity : String(quantity);
  return { ...edit, base: quantity, etag, quantity: target };
}

/** An integer typed by a person: optional sign (a typographic minus or dash too), digits, nothing else. */
function parseWhole(text: string): number | null {
  const trimmed = text.trim().replace(/^[\u2212\u2013]/, '-').replace(/^\+/, '');
  return /^-?\d+$/.test(trimmed) ? Number(trimmed) : null;
}

/** What typing in "Add or remove" does: the quantity becomes base + delta (until it reads as a number, Save says what is wrong). */
export function withDelta(edit: Edit, delta: string): Edit {
  const n = parseWhole(delta);
  return { ...edit, delta, quantity: n === null ? edit.quantity : String(edit.base + n), typed: false, problem: null };
}

/** Typing a quantity replaces any add-or-remove. */
export function withQuantityText(edit: Edit, quantity: string): Edit {
  return { ...edit, quantity, delta: '', typed: true, problem: null };
}

/**
 * What Save sends: an add-or-remove as the adjustment it is (the service applies it to the count it
 * holds, so a change someone else made meanwhile is no conflict), a typed count as the quantity to
 * set (PATCH with If-Match); or why there is nothing to send.
 */
export function savePlan(edit: Edit): { adjust: number } | { quantity: number } | { problem: Problem } {
  if (edit.delta.trim() === '') return targetQuantity(edit);
  const delta = parseWhole(edit.delta);
  if (delta === null || delta === 0) return { problem: { message: DELTA_HINT, field: 'delta' } };
  // Beyond the bounds whatever the count: only the service, which holds the count, judges the rest (below 0, above the maximum).
  if (Math.abs(delta) > MAX_QUANTITY) return { problem: { message: `Add or remove at most ${MAX_QUANTITY.toLocaleString()} at a time.`, field: 'delta' } };
  return { adjust: delta };
}

const DELTA_HINT = 'Enter what arrived as +5, or what left as -2.';

/** The count a typed quantity sets, or why it cannot be saved. */
export function targetQuantity(edit: Edit): { quantity: number } | { problem: Problem } {
  const n = parseWhole(edit.quantity);
  if (n === null) return { problem: { message: 'Enter the new quantity as a whole number.', field: 'quantity' } };
  if (n < 0) return { problem: { message: 'The quantity cannot be below 0.', field: 'quantity' } };
  if (n > MAX_QUANTITY) return { problem: { message: `The quantity can be at most ${MAX_QUANTITY.toLocaleString()}.`, field: 'quantity' } };
  return { quantity: n };
}

/** The add-or-remove typed, when the edit is one. */
export function deltaOf(edit: Edit): number | null {
  return edit.delta.trim() === '' ? null : parseWhole(edit.delta);
}
