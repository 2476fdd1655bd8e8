import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { QuantityChange } from '../../../src/domain/inventory.js';
import { INT64_MAX, INT64_MIN } from '../../../src/domain/pet-id.js';
import type { BatchResult } from '../../../src/store/sqlite/apply-batch.js';
import { deliveryRow, progressWrite } from '../../../src/store/sqlite/record-progress.js';
import { decodeBatch, decodeResults, encodeBatch, encodeResults, type WriterReply, type WriterRequest } from '../../../src/store/sqlite/writer-protocol.js';
import { adjustment, change, changeBatch } from '../../support/store.js';

test('a batch and its results cross to the writer thread and back unchanged, the CLI\'s changes still the CLI\'s', () => {
  const at = new Date('2026-11-24T10:00:00.123Z');
  const changes: QuantityChange[] = [
    change(INT64_MAX, 2147483647, { at }),
    change(INT64_MIN, 0, { at, reason: 'received', condition: { anyVersion: false, versions: [3, 4] } }),
    change(2n ** 53n + 1n, 7, { at, condition: { anyVersion: true }, idempotency: { key: 'k-1', fingerprint: 'f', expiresAt: new Date(at.getTime() + 1000), recordsPerKey: 3 } }),
    change(-1n, 1, { at, reason: 'correction', source: 'cli' }),
    change(5n, 5, { at }),
    change(6n, 6, { at }),
    adjustment(7n, -1, { at, reason: 'sold' }),
    adjustment(8n, 2147483647, { at, condition: { anyVersion: false, versions: [9] } }),
    adjustment(9n, -2147483647, { at, reason: 'damaged', source: 'cli', keyId: 'cli:adjust' }),
  ];
  // structuredClone is what postMessage does to the message.
  assert.deepEqual(decodeBatch(structuredClone(encodeBatch(changes))), changes);

  const results: BatchResult[] = [
    { kind: 'updated', entry: { item: { petId: INT64_MAX, quantity: 2147483647, status: 'sold' }, version: 2 ** 40 }, replayed: false },
    { kind: 'precondition_failed', entry: { item: { petId: INT64_MIN, quantity: 9, status: 'pending' }, version: 5 }, replayed: true },
    { kind: 'idempotency_key_reused' },
    { kind: 'not_found', replayed: true },
    { kind: 'idempotency_records_full', retryAt: new Date('2026-11-25T09:59:58.456Z') },
    { error: { message: 'CHECK constraint failed', code: 'SQLITE_CONSTRAINT_CHECK' } },
    { kind: 'insufficient_stock', entry: { item: { petId: 7n, quantity: 0, status: 'available' }, version: 4 }, replayed: false },
    { kind: 'quantity_out_of_range', entry: { item: { petId: 8n, quantity: 1, status: 'pending' }, version: 9 }, replayed: true },
    { kind: 'updated', entry: { item: { petId: 9n, quantity: 0, status: 'available' }, version: 3 }, replayed: false },
  ];
  assert.deepEqual(decodeResults(structuredClone(encodeResults(results)), changes), results);
});

test('a change batch and its outcome cross as they are: structured cloning keeps the bigints and Dates', () => {
  const at = new Date('2026-11-24T10:00:00.123Z');
  const batch = changeBatch(
    [
      { petId: INT64_MAX, quantity: 3 },
      { petId: INT64_MIN, delta: -2, reason: 'sold', condition: { anyVersion: false, versions: [4] } },
    ],
    { at, idempotency: { key: 'k', fingerprint: 'f', expiresAt: new Date(at.getTime() + 1000), recordsPerKey: 2 } },
  );
  const request: WriterRequest = { changeBatch: batch };
  assert.deepEqual(structuredClone(request), request);
  const replies: WriterReply[] = [
    { batchResult: { kind: 'applied', entries: [{ item: { petId: INT64_MAX, quantity: 3, status: 'sold' }, version: 2 }], replayed: false } },
    { batchResult: { kind: 'refused', index: 1, outcome: { kind: 'insufficient_stock', entry: { item: { petId: INT64_MIN, quantity: 1, status: 'available' }, version: 4 } }, replayed: true } },
    { batchResult: { kind: 'idempotency_records_full', retryAt: at } },
  ];
  for (const reply of replies) assert.deepEqual(structuredClone(reply), reply);
});

test("a webhook endpoint's progress crosses as the rows its transaction binds: each attempt under the endpoint's id, times as ISO text, the claim in ms", () => {
  const at = new Date('2026-11-24T10:00:00.123Z');
  const attempt = { endpointId: 'whk_other', eventId: 'evt_7', seq: 7, attemptedAt: at, status: null, error: 'ECONNRESET', durationMs: 3.6, responseBody: null };
  const progress = { attempts: [attempt], deliveredSeq: 6, deliveredAbove: [8, 9, 11], retrying: [{ seq: 7, failures: 2, at: new Date(at.getTime() + 5000) }], failures: 2, nextAttemptAt: new Date(at.getTime() + 5000), lastFailureAt: at, lastFailure: 'ECONNRESET', disable: 'gone' };
  const request: WriterRequest = { progress: progressWrite('whk_1', 'holder-a', progress, new Date(1_700_000_000_001)) };
  assert.deepEqual(structuredClone(request), {
    progress: {
      row: {
        id: 'whk_1',
        holder: 'holder-a',
        since: 1_700_000_000_001,
        delivered_seq: 6,
        delivered_above: '8-9,11',
        retrying: '7:2:1795514405123',
        failures: 2,
        next_attempt_at: '2026-11-24T10:00:05.123Z',
        last_failure_at: '2026-11-24T10:00:00.123Z',
        last_failure: 'ECONNRESET',
        disable: 'gone',
      },
      attempts: [
        {
          endpoint_id: 'whk_1',
          event_id: 'evt_7',
          seq: 7,
          attempted_at: '2026-11-24T10:00:00.123Z',
          status: null,
          error: 'ECONNRESET',
          duration_ms: 4,
          response_body: null,
        },
      ],
    },
  });
  const unclaimed = progressWrite('whk_1', 'holder-a', { ...progress, attempts: [], nextAttemptAt: null, lastFailureAt: null, lastFailure: null, disable: undefined }, undefined);
  assert.deepEqual(
    [unclaimed.row.since, unclaimed.row.next_attempt_at, unclaimed.row.last_failure_at, unclaimed.row.disable, unclaimed.attempts],
    [null, null, null, null, []],
  );

  const outside: WriterRequest = { attempts: [deliveryRow({ ...attempt, status: 200, error: null, responseBody: 'ok' })] };
  assert.deepEqual(structuredClone(outside), outside);
  assert.equal(outside.attempts[0]!.endpoint_id, 'whk_other', 'an attempt outside any lease keeps its own endpoint');
  for (const reply of [{ recorded: true }, { recorded: false }] satisfies WriterReply[]) assert.deepEqual(structuredClone(reply), reply);
});
