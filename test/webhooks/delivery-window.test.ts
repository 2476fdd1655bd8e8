import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DeliveryWindow } from '../../src/webhooks/delivery-window.js';
import type { WebhookMessage } from '../../src/webhooks/messages.js';

/** Event `seq` of the pets named (none: it concerns every pet, as a reset does). */
const event = (seq: number, ...pets: bigint[]): WebhookMessage => ({ id: `evt_${seq}`, seq, body: '{}', ...(pets.length > 0 && { pets }) });
const seqs = (w: DeliveryWindow, slots = 100, strict = false, now = 0) => w.ready(now, slots, strict).items.map((i) => i.message.seq);

function windowOf(...messages: WebhookMessage[]): DeliveryWindow {
  const w = new DeliveryWindow({ deliveredSeq: 0, deliveredAbove: [], retrying: [] });
  for (const m of messages) w.add(m);
  return w;
}

test('the first event of each pet may go; a pet\'s next waits for it; slots bound how many', () => {
  const w = windowOf(event(1, 1n), event(2, 2n), event(3, 1n), event(4, 3n));
  assert.deepEqual(seqs(w), [1, 2, 4]);
  assert.deepEqual(seqs(w, 2), [1, 2]);
  const [first] = w.ready(0, 1, false).items;
  first!.state = 'sending';
  assert.deepEqual(seqs(w), [2, 4], 'one of a pet at a time: seq 3 waits for seq 1');
  w.delivered(first!);
  assert.deepEqual(seqs(w), [2, 3, 4]);
  assert.deepEqual(w.position(), { deliveredSeq: 1, deliveredAbove: [], retrying: [] });
});

test('strict: only the first undelivered event may go', () => {
  const w = windowOf(event(1, 1n), event(2, 2n));
  assert.deepEqual(seqs(w, 100, true), [1]);
});

test('an event naming no pet waits for all before it and holds back all after it; one naming several, those pets', () => {
  const w = windowOf(event(1, 1n), event(2), event(3, 2n));
  assert.deepEqual(seqs(w), [1]);
  w.delivered(w.ready(0, 1, false).items[0]!);
  assert.deepEqual(seqs(w), [2]);
  const several = windowOf(event(1, 1n), event(2, 1n, 2n), event(3, 2n), event(4, 3n));
  assert.deepEqual(seqs(several), [1, 4]);
});

test('a failed event waits for its retry and holds back only its pet; the place records it, and what went ahead', () => {
  const w = windowOf(event(1, 1n), event(2, 2n), event(3, 1n), event(4, 2n));
  const [one, two] = w.ready(0, 2, false).items;
  one!.failures = 1;
  one!.retryAt = 5000;
  w.delivered(two!);
  const ready = w.ready(1000, 100, false);
  assert.deepEqual([ready.items.map((i) => i.message.seq), ready.dueAt], [[4], 5000]);
  w.delivered(ready.items[0]!);
  assert.deepEqual(w.position(), { deliveredSeq: 0, deliveredAbove: [2, 4], retrying: [{ seq: 1, failures: 1, at: new Date(5000) }] });
  assert.deepEqual(seqs(w, 100, false, 5000), [1]);
});

test('a window started from a recorded place skips what was delivered and keeps the retries\' counts', () => {
  const w = new DeliveryWindow({ deliveredSeq: 0, deliveredAbove: [2, 4], retrying: [{ seq: 1, failures: 2, at: new Date(7000) }] });
  assert.deepEqual(w.position(), { deliveredSeq: 0, deliveredAbove: [2, 4], retrying: [{ seq: 1, failures: 2, at: new Date(7000) }] }, 'unchanged before the log is read again');
  for (const m of [event(1, 1n), event(2, 2n), event(3, 1n), event(4, 2n), event(5, 3n)]) w.add(m);
  assert.equal(w.size, 3);
  const ready = w.ready(0, 100, false);
  assert.deepEqual([ready.items.map((i) => i.message.seq), ready.dueAt], [[5], 7000]);
  assert.equal(w.ready(7000, 100, false).items[0]!.failures, 2);
});
