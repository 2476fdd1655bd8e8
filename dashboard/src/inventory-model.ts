import type { InventoryItem, PetStatus } from '@petstore/inventory-client';

/**
 * The inventory as the table reads it: one array per column, not one object per row. With
 * 100,000 entries a sort is then a numeric sort of a typed array (no comparator calls), and a
 * filter a pass over typed arrays, both a few milliseconds.
 */
export interface InventoryModel {
  readonly size: number;
  /** The ids as the API sent them (bigint, exact), in its order: ascending. */
  readonly ids: readonly bigint[];
  /** The same ids as plain digits: what the table shows and the search matches. */
  readonly idText: readonly string[];
  readonly quantities: Int32Array;
  /** What active reservations hold of each entry, as the last list said (a reservation's event reads the list again). */
  readonly reserved: Int32Array;
  readonly statuses: Uint8Array;
  /** Row index of each id's digits. */
  readonly indexOf: ReadonlyMap<string, number>;
  readonly counts: StatusCounts;
}

export const STATUSES = ['available', 'pending', 'sold'] as const satisfies readonly PetStatus[];
/** The largest quantity the API takes (an int32). */
export const MAX_QUANTITY = 2147483647;

export interface StatusCounts {
  available: number;
  pending: number;
  sold: number;
  total: number;
  outOfStock: number;
}

export type SortColumn = 'petId' | 'quantity' | 'status';
export interface SortOrder {
  column: SortColumn;
  descending: boolean;
}
export interface RowFilter {
  /** A status, or null for all. */
  status: PetStatus | null;
  /** Digits (and a leading "-") that the id must contain; empty for all. */
  search: string;
}

/** What the table keeps of an entry: its count and status, and what reservations hold of it (with the list; a change event leaves it as it was). */
export type ModelItem = Pick<InventoryItem, 'petId' | 'quantity' | 'status'> & { reserved?: number | undefined };

/** What is left to sell: the count less what reservations hold, never below 0 (as the API's `available`). */
export function availableOf(model: Pick<InventoryModel, 'quantities' | 'reserved'>, index: number): number {
  return Math.max(0, model.quantities[index]! - model.reserved[index]!);
}

export function buildModel(items: readonly ModelItem[]): InventoryModel {
  const size = items.length;
  const ids = new Array<bigint>(size);
  const idText = new Array<string>(size);
  const quantities = new Int32Array(size);
  const reserved = new Int32Array(size);
  const statuses = new Uint8Array(size);
  const indexOf = new Map<string, number>();
  const counts: StatusCounts = { available: 0, pending: 0, sold: 0, total: size, outOfStock: 0 };
  for (let i = 0; i < size; i++) {
    const item = items[i]!;
    ids[i] = item.petId;
    idText[i] = item.petId.toString();
    quantities[i] = item.quantity;
    reserved[i] = item.reserved ?? 0;
    const status = STATUSES.indexOf(item.status);
    statuses[i] = status;
    indexOf.set(idText[i]!, i);
    counts[item.status]++;
    if (item.quantity === 0) counts.outOfStock++;
  }
  return { size, ids, idText, quantities, reserved, statuses, indexOf, counts };
}

/** The model with one entry's quantity changed (after a save), counts kept right; the arrays are copied, so memoized views see a new model. */
export function withQuantity(model: InventoryModel, index: number, quantity: number): InventoryModel {
  const quantities = model.quantities.slice();
  const before = quantities[index]!;
  quantities[index] = quantity;
  const outOfStock = model.counts.outOfStock - (before === 0 ? 1 : 0) + (quantity === 0 ? 1 : 0);
  return { ...model, quantities, counts: { ...model.counts, outOfStock } };
}

/** What the change events say of an entry: its quantity and status now, or null once retired. */
export type EntryChange = ModelItem | null;
/** Entries' changes by their id digits. */
export type EntryChanges = ReadonlyMap<string, EntryChange>;

/**
 * The model with the entries' changes applied. Changes of quantity or status copy the two arrays
 * once for the whole batch (ids, and so a sort by id and the search, stay as they are); an entry
 * that appeared or was retired builds the model again, once for the batch, in id order.
 */
export function withChanges(model: InventoryModel, changes: EntryChanges): InventoryModel {
  let reshaped = false;
  for (const [id, change] of changes) {
    if (model.indexOf.has(id) !== (change !== null)) {
      reshaped = true;
      break;
    }
  }
  if (reshaped) return rebuilt(model, changes);
  let quantities: Int32Array | undefined;
  let statuses: Uint8Array | undefined;
  for (const [id, change] of changes) {
    const index = model.indexOf.get(id);
    if (index === undefined || change === null) continue;
    const status = STATUSES.indexOf(change.status);
    if (model.quantities[index] !== change.quantity) (quantities ??= model.quantities.slice())[index] = change.quantity;
    if (model.statuses[index] !== status) (statuses ??= model.statuses.slice())[index] = status;
  }
  if (!quantities && !statuses) return model;
  const next = { ...model, quantities: quantities ?? model.quantities, statuses: statuses ?? model.statuses };
  return { ...next, counts: countsOf(next) };
}

/** The model built again from its rows and the changes: retired ones out, new ones in at their place by id. */
function rebuilt(model: InventoryModel, changes: EntryChanges): InventoryModel {
  const added = [...changes.entries()]
    .flatMap(([id, change]) => (change !== null && !model.indexOf.has(id) ? [change] : []))
    .sort((a, b) => (a.petId < b.petId ? -1 : a.petId > b.petId ? 1 : 0));
  const items: ModelItem[] = [];
  let next = 0;
  for (let i = 0; i < model.size; i++) {
    const petId = model.ids[i]!;
    while (next < added.length && added[next]!.petId < petId) items.push(added[next++]!);
    const change = changes.get(model.idText[i]!);
    if (change === null) continue;
    // A change event does not say what is held: the entry keeps what the list said.
    items.push({ ...(change ?? { petId, quantity: model.quantities[i]!, status: STATUSES[model.statuses[i]!]! }), reserved: model.reserved[i]! });
  }
  while (next < added.length) items.push(added[next++]!);
  return buildModel(items);
}

function countsOf(model: Pick<InventoryModel, 'size' | 'quantities' | 'statuses'>): StatusCounts {
  const counts: StatusCounts = { available: 0, pending: 0, sold: 0, total: model.size, outOfStock: 0 };
  for (let i = 0; i < model.size; i++) {
    counts[STATUSES[model.statuses[i]!]!]++;
    if (model.quantities[i] === 0) counts.outOfStock++;
  }
  return counts;
}

// A sort key packs the value above the row index: value * 2^21 + index stays below 2^53 for every
// quantity (< 2^31) and up to 2 million rows, so Float64Array's numeric sort orders by value, then
// by API order (id ascending), with no comparator. Past 2 million rows the comparator sort is used.
const INDEX_BITS = 2 ** 21;

/** Row indexes in the order asked for. Ties keep the API's order (id ascending) in both directions. */
export function sortRows(model: InventoryModel, order: SortOrder): Uint32Array {
  const { size } = model;
  const rows = new Uint32Array(size);
  if (order.column === 'petId') {
    // The API lists entries by id ascending: that order, or its reverse.
    for (let i = 0; i < size; i++) rows[i] = order.descending ? size - 1 - i : i;
    return rows;
  }
  const values = order.column === 'quantity' ? model.quantities : model.statuses;
  const top = order.column === 'quantity' ? MAX_QUANTITY : STATUSES.length - 1;
  const value = (i: number) => (order.descending ? top - values[i]! : values[i]!);
  if (size > INDEX_BITS) {
    for (let i = 0; i < size; i++) rows[i] = i;
    return rows.sort((a, b) => value(a) - value(b) || a - b);
  }
  const keys = new Float64Array(size);
  for (let i = 0; i < size; i++) keys[i] = value(i) * INDEX_BITS + i;
  keys.sort();
  for (let i = 0; i < size; i++) rows[i] = keys[i]! % INDEX_BITS;
  return rows;
}

/** The sorted rows that pass the filter, in order. */
export function filterRows(model: InventoryModel, sorted: Uint32Array, filter: RowFilter): Uint32Array {
  const status = filter.status === null ? -1 : STATUSES.indexOf(filter.status);
  const search = normalizeSearch(filter.search);
  if (status < 0 && search === '') return sorted;
  const kept = new Uint32Array(sorted.length);
  let n = 0;
  for (let k = 0; k < sorted.length; k++) {
    const i = sorted[k]!;
    if (status >= 0 && model.statuses[i] !== status) continue;
    if (search !== '' && !model.idText[i]!.includes(search)) continue;
    kept[n++] = i;
  }
  return kept.subarray(0, n);
}

/** What the search box holds, reduced to what an id's digits can contain: spaces and thousands separators typed or pasted are dropped. */
export function normalizeSearch(text: string): string {
  return text.replace(/[\s,._']/g, '');
}
