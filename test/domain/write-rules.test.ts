import assert from 'node:assert/strict';
import { test } from 'node:test';
import { encodeOutcome, judgeIdempotency, recordsFull, recordsOverCap, refusePastCap, type RecordsCap } from '../../src/domain/idempotency.js';
import { judgeChange, repeatedPet, requireEachPetOnce, type InventoryEntry } from '../../src/domain/inventory.js';
import { writesChange } from '../../src/domain/write-kinds.js';
import { QUANTITY_MAX } from '../../src/schemas/values.js';

const ENTRY: InventoryEntry = { item: { petId: 9007199254740993n, quantity: 5, status: 'pending' }, version: 3 };

test('judgeChange: no entry is not_found before any condition; a condition on another version fails; anything else applies (decisions 5.5)', () => {
  const set = { quantity: 8 };
  assert.deepEqual(judgeChange(undefined, set), { kind: 'not_found' });
  assert.deepEqual(judgeChange(undefined, { ...set, condition: { anyVersion: false, versions: [3] } }), { kind: 'not_found' });
  assert.deepEqual(judgeChange(undefined, { delta: -1 }), { kind: 'not_found' }, 'a delta too');
  assert.deepEqual(judgeChange(ENTRY, set), { kind: 'apply', current: ENTRY, quantity: 8 });
  assert.deepEqual(judgeChange(ENTRY, { ...set, condition: { anyVersion: true } }), { kind: 'apply', current: ENTRY, quantity: 8 });
  assert.deepEqual(judgeChange(ENTRY, { ...set, condition: { anyVersion: false, versions: [1, 3] } }), { kind: 'apply', current: ENTRY, quantity: 8 });
  assert.deepEqual(judgeChange(ENTRY, { ...set, condition: { anyVersion: false, versions: [2] } }), { kind: 'precondition_failed', entry: ENTRY });
  assert.deepEqual(judgeChange(ENTRY, { ...set, condition: { anyVersion: false, versions: [] } }), { kind: 'precondition_failed', entry: ENTRY }, 'only weak tags');
});

test('judgeChange: a delta moves the count it finds, within 0..QUANTITY_MAX; If-Match is checked before the stock (decisions 5.11)', () => {
  // ENTRY holds 5.
  assert.deepEqual(judgeChange(ENTRY, { delta: -1 }), { kind: 'apply', current: ENTRY, quantity: 4 });
  assert.deepEqual(judgeChange(ENTRY, { delta: -5 }), { kind: 'apply', current: ENTRY, quantity: 0 }, 'down to 0 exactly');
  assert.deepEqual(judgeChange(ENTRY, { delta: 7 }), { kind: 'apply', current: ENTRY, quantity: 12 });
  assert.deepEqual(judgeChange(ENTRY, { delta: -6 }), { kind: 'insufficient_stock', entry: ENTRY });
  assert.deepEqual(judgeChange(ENTRY, { delta: -QUANTITY_MAX }), { kind: 'insufficient_stock', entry: ENTRY });
  assert.deepEqual(judgeChange(ENTRY, { delta: QUANTITY_MAX - 5 }), { kind: 'apply', current: ENTRY, quantity: QUANTITY_MAX }, 'up to the maximum exactly');
  assert.deepEqual(judgeChange(ENTRY, { delta: QUANTITY_MAX - 4 }), { kind: 'quantity_out_of_range', entry: ENTRY });
  assert.deepEqual(judgeChange(ENTRY, { delta: QUANTITY_MAX }), { kind: 'quantity_out_of_range', entry: ENTRY });
  const stale = { anyVersion: false, versions: [2] } as const;
  assert.deepEqual(judgeChange(ENTRY, { delta: -6, condition: stale }), { kind: 'precondition_failed', entry: ENTRY }, '412 before 409');
  assert.deepEqual(judgeChange(ENTRY, { delta: QUANTITY_MAX, condition: stale }), { kind: 'precondition_failed', entry: ENTRY });
  assert.deepEqual(judgeChange(ENTRY, { delta: -2, condition: { anyVersion: false, versions: [3] } }), { kind: 'apply', current: ENTRY, quantity: 3 });
});

test('judgeChange: a set quantity is held to the same bounds', () => {
  assert.deepEqual(judgeChange(ENTRY, { quantity: 0 }), { kind: 'apply', current: ENTRY, quantity: 0 });
  assert.deepEqual(judgeChange(ENTRY, { quantity: QUANTITY_MAX }), { kind: 'apply', current: ENTRY, quantity: QUANTITY_MAX });
  assert.deepEqual(judgeChange(ENTRY, { quantity: QUANTITY_MAX + 1 }), { kind: 'quantity_out_of_range', entry: ENTRY });
  assert.deepEqual(judgeChange(ENTRY, { quantity: -1 }), { kind: 'insufficient_stock', entry: ENTRY });
});

test('repeatedPet: the index of the first change that repeats an earlier petId, or -1', () => {
  assert.equal(repeatedPet([]), -1);
  assert.equal(repeatedPet([{ petId: 1n }, { petId: 2n }, { petId: 2n ** 63n - 1n }]), -1);
  assert.equal(repeatedPet([{ petId: 1n }, { petId: 2n }, { petId: 1n }, { petId: 2n }]), 2);
  assert.equal(repeatedPet([{ petId: 9007199254740993n }, { petId: 9007199254740992n }, { petId: 9007199254740993n }]), 2, 'every digit compared');
});

test('requireEachPetOnce throws for a batch that changes a pet twice, naming the change that repeats it', () => {
  const origin = { source: 'api', keyId: 'key_test', keyName: 'test', requestId: 'r', at: new Date() } as const;
  const change = (petId: bigint) => ({ petId, quantity: 1, reason: null });
  assert.doesNotThrow(() => requireEachPetOnce({ ...origin, changes: [change(1n), change(2n)] }));
  assert.throws(() => requireEachPetOnce({ ...origin, changes: [change(1n), change(2n), change(1n)] }), /^Error: changes\[2\] repeats the petId of an earlier change/);
});

test('judgeIdempotency: new, written over, replayed or refused (decisions 5.6)', () => {
  const outcome = encodeOutcome({ kind: 'updated', entry: ENTRY });
  assert.deepEqual(judgeIdempotency(undefined, 'fp'), { kind: 'new' });
  assert.deepEqual(judgeIdempotency({ fingerprint: 'fp', outcome, expired: false }, 'fp'), {
    kind: 'answer',
    result: { kind: 'updated', entry: ENTRY, replayed: true },
  });
  assert.deepEqual(judgeIdempotency({ fingerprint: 'other', outcome, expired: false }, 'fp'), { kind: 'answer', result: { kind: 'idempotency_key_reused' } });
  // An expired key is free again, whatever it was used for.
  assert.deepEqual(judgeIdempotency({ fingerprint: 'other', outcome, expired: true }, 'fp'), { kind: 'rewrite' });
  // A claim an earlier version left without an outcome: nobody was answered from it, so the change applies once.
  assert.deepEqual(judgeIdempotency({ fingerprint: 'fp', outcome: null, expired: false }, 'fp'), { kind: 'rewrite' });
  // Another request still may not take a live key.
  assert.deepEqual(judgeIdempotency({ fingerprint: 'other', outcome: null, expired: false }, 'fp'), { kind: 'answer', result: { kind: 'idempotency_key_reused' } });
});

test('a stored outcome keeps every digit of its petId', () => {
  const refused = encodeOutcome({ kind: 'precondition_failed', entry: ENTRY });
  assert.deepEqual(judgeIdempotency({ fingerprint: 'fp', outcome: refused, expired: false }, 'fp'), {
    kind: 'answer',
    result: { kind: 'precondition_failed', entry: ENTRY, replayed: true },
  });
  assert.deepEqual(judgeIdempotency({ fingerprint: 'fp', outcome: encodeOutcome({ kind: 'not_found' }), expired: false }, 'fp'), {
    kind: 'answer',
    result: { kind: 'not_found', replayed: true },
  });
});

test('the per-key cap: how many records past it, and the refusal that waits for the oldest live one (decisions 7.2)', () => {
  assert.equal(recordsOverCap(0, 1, 1), 0);
  assert.equal(recordsOverCap(9, 1, 10), 0);
  assert.equal(recordsOverCap(10, 1, 10), 1);
  assert.equal(recordsOverCap(8, 5, 10), 3);
  const now = new Date('2026-11-26T10:00:00Z');
  const oldest = new Date('2026-11-26T11:00:00Z');
  assert.deepEqual(recordsFull(oldest, now), { kind: 'idempotency_records_full', retryAt: oldest });
  assert.deepEqual(recordsFull(undefined, now), { kind: 'idempotency_records_full', retryAt: now }, 'none live: at once');
});

/** A key's records as a port sees them: how many it holds, how many of them expired, when its oldest live one expires; and the calls made. */
function capOver(held: number, expired: number, oldestLive: Date | undefined) {
  const calls: string[] = [];
  const cap: RecordsCap<false> = {
    held: () => (calls.push('held'), held),
    reclaimExpired: (count) => (calls.push(`reclaimExpired ${count}`), Math.min(count, expired)),
    oldestLive: () => (calls.push('oldestLive'), oldestLive),
  };
  const asynchronous: RecordsCap<true> = {
    held: async () => cap.held(),
    reclaimExpired: async (count) => cap.reclaimExpired(count),
    oldestLive: async () => cap.oldestLive(),
  };
  return { cap, asynchronous, calls };
}

test('refusePastCap: within the cap nothing more is asked; over it, expired records are reclaimed first, then the last new keys refused until the oldest live one expires (decisions 7.2)', async () => {
  const now = new Date('2026-11-26T10:00:00Z');
  const oldest = new Date('2026-11-26T11:00:00Z');
  const cases = [
    { name: 'within the cap', held: 9, expired: 0, fresh: 1, expected: undefined, calls: ['held'] },
    { name: 'over it, enough expired', held: 10, expired: 3, fresh: 2, expected: undefined, calls: ['held', 'reclaimExpired 2'] },
    {
      name: 'over it, too few expired',
      held: 10,
      expired: 1,
      fresh: 3,
      expected: { refused: 2, result: { kind: 'idempotency_records_full', retryAt: oldest } },
      calls: ['held', 'reclaimExpired 3', 'oldestLive'],
    },
  ] as const;
  for (const c of cases) {
    const sync = capOver(c.held, c.expired, oldest);
    assert.deepEqual(refusePastCap(sync.cap, c.fresh, 10, now), c.expected, `${c.name}: a synchronous port`);
    assert.deepEqual(sync.calls, c.calls, `${c.name}: what it asked`);
    const async = capOver(c.held, c.expired, oldest);
    const answer = refusePastCap(async.asynchronous, c.fresh, 10, now);
    assert.ok(answer instanceof Promise, `${c.name}: an asynchronous port's answer is a promise`);
    assert.deepEqual(await answer, c.expected, `${c.name}: an asynchronous port`);
    assert.deepEqual(async.calls, c.calls, `${c.name}: what it asked asynchronously`);
  }
  const noneLive = capOver(10, 0, undefined);
  assert.deepEqual(refusePastCap(noneLive.cap, 1, 10, now), { refused: 1, result: { kind: 'idempotency_records_full', retryAt: now } }, 'none live: at once');
});

test('writesChange: a request always writes, a stocktake only a count that differs (decisions 5.4, 5.8)', () => {
  assert.equal(writesChange('updated', 4, 4), true);
  assert.equal(writesChange('updated', 4, 5), true);
  assert.equal(writesChange('imported', 4, 4), false);
  assert.equal(writesChange('imported', 4, 5), true);
});
