import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ListBody, SEGMENT_SIZE } from '../../src/cache/list-body.js';
import { stringifyJson } from '../../src/json.js';
import type { InventoryItem } from '../../src/schemas/inventory.js';
import { PET_STATUSES } from '../../src/schemas/values.js';

/** A small deterministic generator, so a failure can be replayed. */
function random(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    return s / 2 ** 31;
  };
}

/** The list as the API answers it: each entry with what is held (none here) and what is available. */
function answered(items: readonly InventoryItem[]): string {
  return stringifyJson(items.map((i) => ({ ...i, reserved: 0, available: i.quantity })));
}

function sorted(map: Map<bigint, InventoryItem>): InventoryItem[] {
  return [...map.values()].sort((a, b) => (a.petId < b.petId ? -1 : a.petId > b.petId ? 1 : 0));
}

test('renders the same bytes as serialising the sorted list, through random inserts and updates', () => {
  const next = random(7);
  const reference = new Map<bigint, InventoryItem>();
  const body = new ListBody();
  const ids = () => BigInt(Math.floor((next() - 0.5) * 2 ** 40)) * (next() < 0.1 ? 2n ** 23n : 1n);
  for (let i = 0; i < 3000; i++) {
    const item: InventoryItem = { petId: ids(), quantity: Math.floor(next() * 100), status: PET_STATUSES[i % 3]! };
    reference.set(item.petId, item);
  }
  body.reset(sorted(reference));
  assert.equal(body.render().toString(), answered(sorted(reference)));
  for (let round = 0; round < 30; round++) {
    const batch: InventoryItem[] = [];
    for (let i = 0; i < 1 + Math.floor(next() * 200); i++) {
      const existing = [...reference.keys()][Math.floor(next() * reference.size)]!;
      const petId = next() < 0.5 ? existing : ids();
      const item: InventoryItem = { petId, quantity: Math.floor(next() * 2147483647), status: 'pending' };
      reference.set(petId, item);
      batch.push(item);
    }
    body.apply(batch);
    assert.equal(body.render().toString(), answered(sorted(reference)), `round ${round}`);
  }
});

test('one change re-serialises one segment, whatever the size of the list', () => {
  const items = Array.from({ length: 100_000 }, (_, i): InventoryItem => ({ petId: BigInt(i * 3), quantity: i, status: 'available' }));
  const body = new ListBody();
  body.reset(items);
  body.render();
  assert.equal(body.serialisedSegments, Math.ceil(100_000 / SEGMENT_SIZE));
  body.apply([{ petId: 150_000n, quantity: 1, status: 'available' }]);
  const text = body.render().toString();
  assert.equal(body.serialisedSegments, 1);
  assert.match(text, /\{"petId":150000,"quantity":1,"status":"available","reserved":0,"available":1\}/);
  body.render();
  assert.equal(body.serialisedSegments, 0, 'nothing changed: nothing serialised');
});

test('edges: empty list, inserts before the first id and after the last, int64 ends, segment splits', () => {
  const body = new ListBody();
  body.reset([]);
  assert.equal(body.render().toString(), '[]');
  body.apply([{ petId: 5n, quantity: 1, status: 'sold' }]);
  body.apply([{ petId: -(2n ** 63n), quantity: 2, status: 'sold' }, { petId: 2n ** 63n - 1n, quantity: 3, status: 'sold' }]);
  assert.equal(
    body.render().toString(),
    '[{"petId":-9223372036854775808,"quantity":2,"status":"sold","reserved":0,"available":2},{"petId":5,"quantity":1,"status":"sold","reserved":0,"available":1},{"petId":9223372036854775807,"quantity":3,"status":"sold","reserved":0,"available":3}]',
  );
  const many = Array.from({ length: 3 * SEGMENT_SIZE }, (_, i): InventoryItem => ({ petId: BigInt(10 + i), quantity: 0, status: 'available' }));
  body.apply(many);
  const all = JSON.parse(body.render().toString()) as { petId: number }[];
  assert.equal(all.length, 3 + 3 * SEGMENT_SIZE);
  assert.ok(all.every((x, i) => i === 0 || all[i - 1]!.petId < x.petId));
});

test('remove takes entries out wherever they are, drops emptied segments, and ignores ids it does not hold', () => {
  const next = random(11);
  const reference = new Map<bigint, InventoryItem>();
  for (let i = 0; i < 5 * SEGMENT_SIZE; i++) reference.set(BigInt(i * 2), { petId: BigInt(i * 2), quantity: i, status: 'sold' });
  const body = new ListBody();
  body.reset(sorted(reference));
  body.render();
  for (let round = 0; round < 20; round++) {
    const ids = [...reference.keys()];
    const gone = Array.from({ length: 1 + Math.floor(next() * 300) }, () => ids[Math.floor(next() * ids.length)]!);
    for (const id of gone) reference.delete(id);
    body.remove([...new Set(gone)].sort((a, b) => (a < b ? -1 : 1)).concat([-1n, 1n, 2n ** 62n]));
    assert.equal(body.render().toString(), answered(sorted(reference)), `round ${round}`);
    assert.equal(body.size, reference.size);
  }
  // A whole segment emptied, then an insert where it was.
  body.remove(sorted(reference).slice(0, 2 * SEGMENT_SIZE).map((i) => i.petId));
  body.apply([{ petId: 0n, quantity: 1, status: 'pending' }]);
  const first = sorted(reference).slice(2 * SEGMENT_SIZE);
  assert.equal(body.render().toString(), answered([{ petId: 0n, quantity: 1, status: 'pending' }, ...first]));
  body.remove([0n, ...first.map((i) => i.petId)]);
  assert.equal(body.render().toString(), '[]');
});
