import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EVENT_COUNT_PAGE, EVENT_PAGE, EventHub, type EventHubObserver, type EventSubscriber } from '../../src/cache/event-hub.js';
import type { EventType, InventoryEvent } from '../../src/domain/event.js';
import { MemoryEvents } from '../support/memory-events.js';
import { until } from '../support/process.js';

/** A subscriber that keeps what it is given, as a stream does: only events above its position. */
class Recorder implements EventSubscriber {
  readonly seqs: number[] = [];
  resets: number[] = [];
  constructor(public position: number) {}
  deliver(events: readonly InventoryEvent[]): void {
    for (const e of events) {
      if (e.seq <= this.position) continue;
      this.seqs.push(e.seq);
      this.position = e.seq;
    }
  }
  reset(head: number): void {
    this.resets.push(head);
    this.position = head;
  }
}

test('one read of the log serves every subscriber, each event once and in order', async (t) => {
  const log = new MemoryEvents();
  const hub = new EventHub(log, { pollMs: 60_000 });
  t.after(() => hub.close());
  const start = await hub.ready();
  const subscribers = Array.from({ length: 50 }, () => new Recorder(start));
  for (const s of subscribers) hub.join(s);
  const readsBefore = log.reads;
  for (let i = 1; i <= 5; i++) log.append(BigInt(i), i);
  await until(() => subscribers.every((s) => s.seqs.length === 5), 'delivery to every subscriber');
  for (const s of subscribers) assert.deepEqual(s.seqs, [1, 2, 3, 4, 5]);
  // The hints of five appends coalesce: a read under way is followed by one more at most.
  assert.ok(log.reads - readsBefore <= 5, `${log.reads - readsBefore} reads for 50 subscribers`);
});

test('without a hint (a change through another instance) the poll brings the event', async (t) => {
  const log = new MemoryEvents();
  const hub = new EventHub(log, { pollMs: 20 });
  t.after(() => hub.close());
  const s = new Recorder(await hub.ready());
  hub.join(s);
  log.append(1n, 3, { hint: false });
  await until(() => s.seqs.length === 1, 'the polled event');
  assert.deepEqual(s.seqs, [1]);
});

test('a page at a time: more than a page of events arrives whole, in order', async (t) => {
  const log = new MemoryEvents();
  const hub = new EventHub(log, { pollMs: 60_000 });
  t.after(() => hub.close());
  const s = new Recorder(await hub.ready());
  hub.join(s);
  for (let i = 0; i < EVENT_PAGE * 2 + 5; i++) log.append(1n, i, { hint: false });
  log.append(1n, 0);
  await until(() => s.seqs.length === EVENT_PAGE * 2 + 6, 'every event');
  assert.deepEqual(s.seqs, Array.from({ length: EVENT_PAGE * 2 + 6 }, (_, i) => i + 1));
});

test('a subscriber may join only at or ahead of the hub; gaps in seq are followed', async (t) => {
  const log = new MemoryEvents();
  log.append(1n, 1);
  const hub = new EventHub(log, { pollMs: 60_000 });
  t.after(() => hub.close());
  assert.equal(await hub.ready(), 1);
  assert.throws(() => hub.join(new Recorder(0)), /behind the hub/);
  const s = new Recorder(1);
  hub.join(s);
  log.append(1n, 2, { skip: 3 });
  await until(() => s.seqs.length === 1, 'the event after the gap');
  assert.deepEqual(s.seqs, [5]);
});

test('when the hub finds its position pruned, every subscriber is reset to the head', async (t) => {
  const log = new MemoryEvents();
  const hub = new EventHub(log, { pollMs: 60_000 });
  t.after(() => hub.close());
  const s = new Recorder(await hub.ready());
  hub.join(s);
  log.append(1n, 1, { hint: false });
  log.append(1n, 2, { hint: false });
  log.pruneThrough(2);
  log.append(1n, 3);
  await until(() => s.resets.length === 1, 'the reset');
  assert.deepEqual(s.resets, [3], 'to the head the read saw');
  log.append(1n, 4);
  await until(() => s.seqs.length === 1, 'the next event');
  assert.deepEqual(s.seqs, [4]);
});

test('with no subscriber left the hub stops reading and listening; followAlways keeps it on', async (t) => {
  const log = new MemoryEvents();
  const hub = new EventHub(log, { pollMs: 10 });
  t.after(() => hub.close());
  // A stream that read the log up to event 1 itself (its replay), ahead of the hub, which has not polled since.
  assert.equal(await hub.ready(), 0);
  const s = new Recorder(1);
  hub.join(s);
  assert.equal(log.listeners, 1);
  hub.leave(s);
  assert.equal(log.listeners, 0);
  assert.equal(hub.position, undefined);
  const reads = log.reads;
  const counts = log.counts;
  await new Promise((wake) => setTimeout(wake, 100));
  assert.equal(log.reads, reads, 'no read with nobody to serve');
  assert.equal(log.counts, counts, 'no count either');
  hub.followAlways();
  await until(() => log.counts > counts, 'a count while following always');
  log.append(7n, 1);
  await until(() => hub.head === 1, 'the head seen');
});

/** What the metrics are told: every event read and every one counted, by type. */
class Tally implements EventHubObserver {
  readonly read_: Partial<Record<EventType, number>> = {};
  readonly counted_: Partial<Record<EventType, number>> = {};
  read(events: readonly InventoryEvent[]): void {
    for (const e of events) this.read_[e.type] = (this.read_[e.type] ?? 0) + 1;
  }
  counted(byType: Partial<Record<EventType, number>>): void {
    for (const [type, n] of Object.entries(byType) as [EventType, number][]) this.counted_[type] = (this.counted_[type] ?? 0) + n;
  }
}

test('following always with no stream open, the hub counts the events (more than a page of them) and reads none; with a stream, it reads them', async (t) => {
  const log = new MemoryEvents();
  const tally = new Tally();
  const hub = new EventHub(log, { pollMs: 10, observer: tally });
  t.after(() => hub.close());
  hub.followAlways();
  await hub.ready();
  const many = EVENT_COUNT_PAGE + 5;
  for (let i = 0; i < many; i++) log.append(BigInt(i + 1), i, { hint: false });
  log.append(1n, 1);
  await until(() => hub.position === many + 1, 'every event counted');
  assert.deepEqual(tally.counted_, { 'inventory.updated': many + 1 });
  assert.deepEqual(tally.read_, {});
  assert.equal(log.reads, 0, 'no event read out');

  const s = new Recorder(await hub.ready());
  hub.join(s);
  log.append(2n, 5);
  await until(() => s.seqs.length === 1, 'the stream sent the next event');
  assert.deepEqual(s.seqs, [many + 2]);
  assert.deepEqual(tally.read_, { 'inventory.updated': 1 }, 'read, as a stream is open');
  assert.deepEqual(tally.counted_, { 'inventory.updated': many + 1 }, 'and not counted as well');
});

test('a stream that joins while the hub counts is sent the events that count covered', async (t) => {
  const log = new MemoryEvents();
  const tally = new Tally();
  // With no stream open, the hub counts at its poll (it takes no hint).
  const hub = new EventHub(log, { pollMs: 20, observer: tally });
  t.after(() => hub.close());
  hub.followAlways();
  const position = await hub.ready();
  // The count under way when the stream joins: joined at the hub's position, it must still get events 1 and 2.
  const count = log.countEvents.bind(log);
  let s: Recorder | undefined;
  log.countEvents = async (after, limit) => {
    const answer = await count(after, limit);
    s ??= new Recorder(position);
    if (!hub.size) hub.join(s);
    return answer;
  };
  log.append(1n, 1, { hint: false });
  log.append(2n, 2, { hint: false });
  await until(() => s !== undefined && s.seqs.length === 2, 'both events sent to the stream');
  assert.deepEqual(s!.seqs, [1, 2]);
  assert.deepEqual(tally.counted_, {}, 'the count was dropped, as the events were read');
  assert.deepEqual(tally.read_, { 'inventory.updated': 2 });
});

test('following for the metrics alone, the hub counts at its poll and takes no hint; a stream makes it take them until the last one leaves', async (t) => {
  const log = new MemoryEvents();
  const tally = new Tally();
  const hub = new EventHub(log, { pollMs: 60_000, observer: tally });
  t.after(() => hub.close());
  hub.followAlways();
  await hub.ready();
  assert.equal(log.listeners, 0, 'no hint taken with no stream open');
  log.append(1n, 1);
  await new Promise((wake) => setTimeout(wake, 50));
  assert.equal(log.counts, 0, 'a hint alone makes no count');

  // A stream that read the log up to event 1 itself (its replay), ahead of the hub, which has not polled since.
  assert.equal(await hub.ready(), 0);
  const s = new Recorder(1);
  hub.join(s);
  assert.equal(log.listeners, 1);
  log.append(2n, 2);
  await until(() => s.seqs.length === 1, 'the hinted event sent to the stream');
  assert.deepEqual(s.seqs, [2]);
  hub.leave(s);
  assert.equal(log.listeners, 0, 'the last stream gone, hints are no longer taken');
  assert.equal(hub.position, 2, 'and the hub still follows');

  const polled = new EventHub(log, { pollMs: 10, observer: tally });
  t.after(() => polled.close());
  polled.followAlways();
  await polled.ready();
  log.append(3n, 3, { hint: false });
  await until(() => polled.head === 3, 'the poll counted the new event');
});
