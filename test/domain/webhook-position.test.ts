import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decodeRetrying, decodeSeqs, encodeRetrying, encodeSeqs } from '../../src/domain/webhook-position.js';

test('delivered seqs are kept as ascending ranges and read back as they were', () => {
  const seqs = [3, 4, 5, 9, 11, 12, 100];
  assert.equal(encodeSeqs(seqs), '3-5,9,11-12,100');
  assert.deepEqual(decodeSeqs(encodeSeqs(seqs)), seqs);
  assert.equal(encodeSeqs([]), '');
  assert.deepEqual(decodeSeqs(''), []);
  const many = Array.from({ length: 5000 }, (_, i) => 1_000_000 + i);
  assert.equal(encodeSeqs(many), '1000000-1004999', 'a run of any length is one range');
});

test('events waiting for a retry keep their seq, count and time', () => {
  const retrying = [
    { seq: 7, failures: 2, at: new Date(Date.UTC(2026, 0, 1, 0, 0, 5, 123)) },
    { seq: 12, failures: 9, at: new Date(Date.UTC(2026, 0, 2)) },
  ];
  assert.equal(encodeRetrying(retrying), '7:2:1767225605123,12:9:1767312000000');
  assert.deepEqual(decodeRetrying(encodeRetrying(retrying)), retrying);
  assert.deepEqual(decodeRetrying(''), []);
});
