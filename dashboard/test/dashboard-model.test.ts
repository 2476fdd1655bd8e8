import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { InventoryItem, PetStatus } from '@petstore/inventory-client';
import { deltaOf, newEdit, rebase, REASONS, savePlan, withDelta, withQuantityText } from '../src/edits.js';
import { CHANGE_REASONS } from '../../src/schemas/values.js';
import { newIdempotencyKey } from '../src/idempotency.js';
import { buildModel, filterRows, sortRows, STATUSES, withChanges, withQuantity, type EntryChange, type EntryChanges, type SortColumn } from '../src/inventory-model.js';

/** The dashboard's table logic, outside the browser: its sort and filter against a plain comparator sort of objects. */

function randomItems(n: number, seed: number): InventoryItem[] {
  let state = seed;
  const next = () => (state = (state * 1103515245 + 12345) % 2 ** 31);
  const items: InventoryItem[] = [];
  let id = -9223372036854775808n;
  for (let i = 0; i < n; i++) {
    // Ids ascending, as the API lists them, with gaps that cross 2^53 and the int64 bounds.
    id += BigInt(next()) * 2n ** 30n + 1n;
    // Few distinct quantities: many ties, whose order the sort must keep (API order, id ascending).
    const quantity = i % 7 === 0 ? 0 : next() % 50;
    items.push({ petId: id, quantity, status: STATUSES[next() % 3] as PetStatus });
  }
  items.push({ petId: 9223372036854775807n, quantity: 2147483647, status: 'sold' });
  return items;
}

const rank = (status: PetStatus) => STATUSES.indexOf(status);

function referenceSort(items: InventoryItem[], column: SortColumn, descending: boolean): bigint[] {
  const indexed = items.map((item, i) => ({ item, i }));
  const value = (x: { item: InventoryItem }) => (column === 'quantity' ? x.item.quantity : rank(x.item.status));
  indexed.sort((a, b) => {
    if (column === 'petId') return descending ? b.i - a.i : a.i - b.i;
    return (descending ? value(b) - value(a) : value(a) - value(b)) || a.i - b.i;
  });
  return indexed.map((x) => x.item.petId);
}

test('sortRows orders by each column both ways, ties in API order, exactly as a comparator sort of the objects', () => {
  const items = randomItems(5000, 7);
  const model = buildModel(items);
  for (const column of ['petId', 'quantity', 'status'] as const) {
    for (const descending of [false, true]) {
      const rows = sortRows(model, { column, descending });
      assert.deepEqual(Array.from(rows, (i) => model.ids[i]), referenceSort(items, column, descending), `${column} ${descending ? 'desc' : 'asc'}`);
    }
  }
});

test('filterRows keeps the sorted order and applies status and id search together', () => {
  const items = randomItems(3000, 11);
  const model = buildModel(items);
  const sorted = sortRows(model, { column: 'quantity', descending: true });
  const expected = referenceSort(items, 'quantity', true).filter((id) => {
    const item = items.find((x) => x.petId === id)!;
    return item.status === 'pending' && id.toString().includes('-9');
  });
  assert.deepEqual(Array.from(filterRows(model, sorted, { status: 'pending', search: ' -9 ' }), (i) => model.ids[i]), expected);
  assert.equal(filterRows(model, sorted, { status: null, search: '' }), sorted, 'no filter: the same rows, not a copy');
  const exact = filterRows(model, sorted, { status: null, search: '9223372036854775807' });
  assert.deepEqual(Array.from(exact, (i) => model.idText[i]), ['9223372036854775807'], 'the largest int64, by its digits');
});

test('buildModel counts statuses and empty entries; withQuantity keeps the counts right', () => {
  const model = buildModel([
    { petId: 1n, quantity: 0, status: 'available' },
    { petId: 9007199254740993n, quantity: 5, status: 'pending' },
    { petId: 3n, quantity: 2, status: 'pending' },
  ] as InventoryItem[]);
  assert.deepEqual(model.counts, { available: 1, pending: 2, sold: 0, total: 3, outOfStock: 1 });
  assert.equal(model.idText[1], '9007199254740993');
  const after = withQuantity(model, 0, 4);
  assert.equal(after.counts.outOfStock, 0);
  assert.equal(model.quantities[0], 0, 'the old model is untouched');
  assert.equal(withQuantity(after, 2, 0).counts.outOfStock, 1);
});

test('an add-or-remove is saved as the adjustment it is, whatever the count; a typed quantity as the count, refused where the API would', () => {
  let edit = newEdit(42n, 10);
  edit = withDelta(edit, '+5');
  assert.equal(edit.quantity, '15', 'the count it would give from the version read, shown');
  assert.equal(deltaOf(edit), 5);
  assert.deepEqual(savePlan(edit), { adjust: 5 });
  // Below 0 from the version read: only the service, which holds the count now, can refuse it.
  edit = withDelta(edit, '-12');
  assert.deepEqual(savePlan(edit), { adjust: -12 });
  assert.deepEqual(savePlan(withDelta(newEdit(42n, 2147483600), '+100')), { adjust: 100 }, 'above the maximum: the service judges it too');
  assert.deepEqual(savePlan(withDelta(newEdit(42n, 0), '-2147483647')), { adjust: -2147483647 });
  for (const text of ['2147483648', '-2147483648']) {
    assert.deepEqual(savePlan(withDelta(edit, text)), { problem: { message: 'Add or remove at most 2,147,483,647 at a time.', field: 'delta' } }, text);
  }
  edit = withQuantityText(edit, '7');
  assert.equal(edit.delta, '', 'typing a quantity replaces the add-or-remove');
  assert.equal(deltaOf(edit), null);
  assert.deepEqual(savePlan(edit), { quantity: 7 });
  assert.deepEqual(savePlan(withQuantityText(edit, '2.5')), { problem: { message: 'Enter the new quantity as a whole number.', field: 'quantity' } });
  assert.deepEqual(savePlan(withQuantityText(edit, '-1')), { problem: { message: 'The quantity cannot be below 0.', field: 'quantity' } });
  assert.deepEqual(savePlan(withQuantityText(edit, '2147483648')), { problem: { message: 'The quantity can be at most 2,147,483,647.', field: 'quantity' } });
  assert.deepEqual(savePlan(withQuantityText(edit, '2147483647')), { quantity: 2147483647 });
  // An add-or-remove cleared by hand is no change: the count shown is saved, as typed.
  assert.deepEqual(savePlan(withDelta(withDelta(newEdit(42n, 10), '+3'), '')), { quantity: 13 });
});

test('the reasons offered are the service\'s, in its order', () => {
  assert.deepEqual([...REASONS], [...CHANGE_REASONS]);
});

test('idempotency keys are random version 4 UUIDs', () => {
  const keys = new Set(Array.from({ length: 1000 }, newIdempotencyKey));
  assert.equal(keys.size, 1000);
  for (const key of keys) assert.match(key, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
});

test('an edit moves onto a newer version: an add-or-remove is worked out again, an untouched count follows, a typed one stays', () => {
  // The table showed 10; the service has 12 by the time the version is read.
  assert.equal(rebase(withDelta(newEdit(7n, 10), '+5'), 12, '"v2"').quantity, '17', 'the +5 is added to 12, not 10');
  assert.equal(rebase(newEdit(7n, 10), 12, '"v2"').quantity, '12');
  const typed = rebase(withQuantityText(newEdit(7n, 10), '10'), 12, '"v2"');
  assert.equal(typed.quantity, '10', 'what the user typed, even when it equals the old count');
  assert.deepEqual([typed.base, typed.etag], [12, '"v2"']);
});

test('an add-or-remove that is not a whole number, or 0, is refused, never saved as the old count', () => {
  for (const text of ['2-', '5x', '+', '1.5', '0', '-0', '+0']) {
    assert.deepEqual(savePlan(withDelta(newEdit(7n, 10), text)), { problem: { message: 'Enter what arrived as +5, or what left as -2.', field: 'delta' } }, text);
  }
  // A typographic minus or dash, as keyboards and phones type it, is a minus.
  assert.deepEqual(savePlan(withDelta(newEdit(7n, 10), '\u22122')), { adjust: -2 });
  assert.deepEqual(savePlan(withDelta(newEdit(7n, 10), '\u20133')), { adjust: -3 });
});

test('withChanges applies what the events say: quantities and statuses in place, new and retired entries at their place by id', () => {
  // In id order, as the API lists them.
  const items = randomItems(2000, 11).sort((x, y) => (x.petId < y.petId ? -1 : x.petId > y.petId ? 1 : 0));
  const model = buildModel(items);
  const [a, b, c] = [items[5]!, items[1000]!, items[1999]!];
  const inPlace: EntryChanges = new Map([
    [a.petId.toString(), { ...a, quantity: a.quantity + 7 }],
    [b.petId.toString(), { ...b, quantity: 0, status: b.status === 'sold' ? 'available' : 'sold' }],
  ]);
  const updated = withChanges(model, inPlace);
  const expected = items.map((i) => (inPlace.get(i.petId.toString()) ?? i));
  assert.deepEqual(updated, buildModel(expected), 'the same model as the list with those values');
  assert.equal(updated.ids, model.ids, 'ids shared: the sort by id and the search need not run again');
  assert.notEqual(updated.quantities, model.quantities);
  assert.deepEqual(model, buildModel(items), 'the model it was given is left as it was');
  assert.equal(withChanges(model, new Map([[a.petId.toString(), a]])), model, 'a change to what it holds already is no change');

  // 2^53 + 1 between its neighbours; a retired entry leaves; a quantity changes in the same batch.
  const between = { petId: 2n ** 53n + 1n, quantity: 3, status: 'pending' as const };
  const first = { petId: -9223372036854775808n, quantity: 1, status: 'available' as const };
  const reshaped: EntryChanges = new Map<string, EntryChange>([
    [between.petId.toString(), between],
    [first.petId.toString(), first],
    [c.petId.toString(), null],
    [a.petId.toString(), { ...a, quantity: 1 }],
  ]);
  const withoutC = items.filter((i) => i !== c && i.petId !== between.petId && i.petId !== first.petId).map((i) => (i === a ? { ...a, quantity: 1 } : i));
  const want = [...withoutC, between, first].sort((x, y) => (x.petId < y.petId ? -1 : x.petId > y.petId ? 1 : 0));
  assert.deepEqual(withChanges(model, reshaped), buildModel(want));
});
