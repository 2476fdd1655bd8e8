import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decodeBatchOutcome, encodeBatchOutcome, encodeOutcome, judgeIdempotency, replayBatchOutcome } from '../../src/domain/idempotency.js';
import type { BatchOutcome, InventoryEntry } from '../../src/domain/inventory.js';

const ENTRY: InventoryEntry = { item: { petId: 9007199254740993n, quantity: 5, status: 'pending' }, version: 3 };
const OTHER: InventoryEntry = { item: { petId: -9223372036854775808n, quantity: 2147483647, status: 'sold' }, version: 2 ** 40 };

/** A batch's outcome of each shape: applied (none, several), refused by each kind of change. */
const OUTCOMES: readonly BatchOutcome[] = [
  { kind: 'applied', entries: [] },
  { kind: 'applied', entries: [ENTRY, OTHER] },
  { kind: 'refused', index: 0, outcome: { kind: 'not_found' } },
  { kind: 'refused', index: 3, outcome: { kind: 'precondition_failed', entry: ENTRY } },
  { kind: 'refused', index: 999, outcome: { kind: 'insufficient_stock', entry: OTHER } },
  { kind: 'refused', index: 1, outcome: { kind: 'quantity_out_of_range', entry: ENTRY } },
];

test('a batch outcome is stored and read back whole: every entry, every digit of its petId, the refused index and outcome (decisions 5.12)', () => {
  for (const outcome of OUTCOMES) {
    const text = encodeBatchOutcome(outcome);
    assert.equal(typeof JSON.parse(text), 'object', 'JSON');
    assert.deepEqual(decodeBatchOutcome(text), outcome, text);
    assert.deepEqual(replayBatchOutcome(text), { ...outcome, replayed: true }, text);
  }
});

test('judgeIdempotency replays a batch record as a batch outcome, and refuses another request with the key', () => {
  const stored = encodeBatchOutcome(OUTCOMES[1]!);
  assert.deepEqual(judgeIdempotency({ fingerprint: 'fp', outcome: stored, expired: false }, 'fp', replayBatchOutcome), {
    kind: 'answer',
    result: { ...OUTCOMES[1]!, replayed: true },
  });
  assert.deepEqual(judgeIdempotency({ fingerprint: 'other', outcome: stored, expired: false }, 'fp', replayBatchOutcome), {
    kind: 'answer',
    result: { kind: 'idempotency_key_reused' },
  });
  assert.deepEqual(judgeIdempotency({ fingerprint: 'fp', outcome: stored, expired: true }, 'fp', replayBatchOutcome), { kind: 'rewrite' });
  assert.deepEqual(judgeIdempotency(undefined, 'fp', replayBatchOutcome), { kind: 'new' });
});

test('a change outcome keeps the new refusal kinds with their entry', () => {
  for (const kind of ['insufficient_stock', 'quantity_out_of_range'] as const) {
    const text = encodeOutcome({ kind, entry: OTHER });
    assert.deepEqual(judgeIdempotency({ fingerprint: 'fp', outcome: text, expired: false }, 'fp'), { kind: 'answer', result: { kind, entry: OTHER, replayed: true } });
  }
});
