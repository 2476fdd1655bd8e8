import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { eventJson } from '../../src/domain/event.js';
import { openNatsStream } from '../../src/relay/nats-stream.js';
import { EventRelay, type RelayLog } from '../../src/relay/relay.js';
import type { Relays, Store } from '../../src/store/store.js';
import { buildTestApp } from '../support/app.js';
import { BACKENDS, backendSkip, createTestDatabase } from '../support/backends.js';
import { natsSkip, startTestNats, type TestNats } from '../support/nats.js';
import { until } from '../support/process.js';
import { patch } from '../support/requests.js';
import { change, eventsAfter } from '../support/store.js';

/**
 * The event relay: every event of the log on the JetStream stream once, in seq order, each with its
 * id as Nats-Msg-Id and the feed's JSON as its body; through a NATS outage, between two instances,
 * and after a crash between publishing and recording.
 */

const skipNats = natsSkip();
const PETS = [1n, 2n, 3n, 4n, 5n].map((petId) => ({ petId, quantity: 0, status: 'available' as const }));

/** A deadline on waiting for the relay, not a timing assertion. */
const RELAY_WAIT = { timeoutMs: 30_000, everyMs: 50 };

/** The stream holds every event of the store's log (after `after`), once each, in seq order, as the feed encodes them. */
async function assertStreamHoldsLog(nats: TestNats, stream: string, store: Store, after = 0): Promise<void> {
  const events = await eventsAfter(store, after);
  assert.ok(events.length > 0);
  await until(async () => (await nats.messages(stream).catch(() => [])).length >= events.length, `${events.length} messages on the stream`, RELAY_WAIT);
  const messages = await nats.messages(stream);
  assert.deepEqual(
    messages.map((m) => ({ subject: m.subject, msgId: m.msgId, body: m.body })),
    events.map((e) => ({ subject: `inventory.events.${e.type}`, msgId: `evt_${e.seq}`, body: eventJson(e) })),
  );
}

/** A relay of `store` to the test's NATS, its lines kept, its publishes counted. */
function relayOf(store: Pick<Store, 'events'> & { relays: Relays }, nats: TestNats, stream: string, leaseMs = 60_000) {
  const lines: string[] = [];
  let published = 0;
  const log: RelayLog = { info: (_f, m) => void lines.push(m), warn: (_f, m) => void lines.push(m) };
  const relay = new EventRelay({
    name: stream,
    relays: store.relays,
    events: store.events,
    open: () => openNatsStream({ url: nats.url, stream, maxAgeMs: 0 }),
    log,
    observer: { published: (n) => (published += n), outage: () => {} },
    leaseMs,
  });
  return { relay, lines, published: () => published };
}

async function burst(store: Store, from: number, count: number): Promise<void> {
  await Promise.all(Array.from({ length: count }, (_, i) => store.changes.applyChange(change(PETS[i % PETS.length]!.petId, from + i))));
}

async function withRelay(t: TestContext, relay: EventRelay): Promise<EventRelay> {
  t.after(() => relay.close());
  relay.start();
  return relay;
}

for (const backend of BACKENDS) {
  describe(`event relay to NATS JetStream on ${backend}`, { skip: skipNats || (await backendSkip(backend)) }, () => {
    it('a consumer reads every event of a PATCH burst once, in seq order, with its id as Nats-Msg-Id', async (t) => {
      const nats = await startTestNats(t);
      const api = await buildTestApp(t, { backend, items: PETS, config: { EVENTS_NATS_URL: nats.url } });
      const answers = await Promise.all(Array.from({ length: 60 }, (_, i) => patch(api, String(PETS[i % PETS.length]!.petId), { quantity: i + 1 })));
      assert.deepEqual(new Set(answers.map((a) => a.status)), new Set([200]));
      await assertStreamHoldsLog(nats, 'INVENTORY_EVENTS', api.store);
    });

    it('two publishers on one database: each event is published exactly once', async (t) => {
      const nats = await startTestNats(t);
      const database = await createTestDatabase(backend, t);
      const one = await database.open();
      const two = await database.open();
      await one.changes.addItems(PETS);
      const first = relayOf(one, nats, 'TWO');
      const second = relayOf(two, nats, 'TWO');
      await withRelay(t, first.relay);
      await withRelay(t, second.relay);
      await burst(one, 1, 40);
      await burst(two, 100, 40);
      await assertStreamHoldsLog(nats, 'TWO', one);
      const head = await one.events.head();
      // Not one publish beside the holder's, not even one the stream would have dropped as a duplicate.
      assert.equal(first.published() + second.published(), head);
      assert.equal([first.relay, second.relay].filter((r) => r.publishing).length, 1);
    });
  });
}

describe('event relay to NATS JetStream, NATS or the publisher failing', { skip: skipNats || (await backendSkip('sqlite')) }, () => {
  it('NATS stopped and started mid-burst: nothing lost, nothing doubled', async (t) => {
    const nats = await startTestNats(t);
    const database = await createTestDatabase('sqlite', t);
    const store = await database.open();
    await store.changes.addItems(PETS);
    const { relay, lines } = relayOf(store, nats, 'OUTAGE');
    await withRelay(t, relay);
    await burst(store, 1, 30);
    await until(async () => (await nats.messages('OUTAGE').catch(() => [])).length > 0, 'some events published', RELAY_WAIT);
    await nats.stop();
    await burst(store, 100, 30);
    await until(() => lines.some((l) => l.includes('out of reach')), 'the outage noticed', RELAY_WAIT);
    await burst(store, 200, 30);
    await nats.start();
    await assertStreamHoldsLog(nats, 'OUTAGE', store);
    await until(() => lines.some((l) => l.includes('publishing resumed')), 'the resume said', RELAY_WAIT);
  });

  it('events pruned before they were published: the relay says so and goes on from the oldest event left', async (t) => {
    const nats = await startTestNats(t);
    const database = await createTestDatabase('sqlite', t);
    const store = await database.open();
    await store.changes.addItems(PETS);
    await burst(store, 1, 10);
    const pruned = await store.events.head();
    await store.events.purgeEvents(new Date(Date.now() + 60_000));
    await burst(store, 100, 10);
    const { relay, lines, published } = relayOf(store, nats, 'PRUNED');
    await withRelay(t, relay);
    await assertStreamHoldsLog(nats, 'PRUNED', store, pruned);
    assert.equal(published(), (await store.events.head()) - pruned);
    assert.ok(lines.some((l) => l.includes('pruned from the log before they were published')));
  });

  it('a publisher that crashed after publishing, before recording: its successor publishes again, the stream holds each event once', async (t) => {
    const nats = await startTestNats(t);
    const database = await createTestDatabase('sqlite', t);
    const store = await database.open();
    await store.changes.addItems(PETS);
    await burst(store, 1, 40);
    // The crashed one: its acks came, its records never reached the store, and it never released its lease.
    const lost: Relays = { lease: (...a) => store.relays.lease(...a), recordPosition: async () => true, release: async () => {} };
    const crashed = relayOf({ events: store.events, relays: lost }, nats, 'CRASH', 1000);
    await withRelay(t, crashed.relay);
    const head = await store.events.head();
    await until(() => crashed.published() === head, 'every event published once', RELAY_WAIT);
    await crashed.relay.close();
    const successor = relayOf(await database.open(), nats, 'CRASH', 1000);
    await withRelay(t, successor.relay);
    await until(() => successor.published() === head, 'the successor published from the recorded position', RELAY_WAIT);
    await assertStreamHoldsLog(nats, 'CRASH', store);
  });
});
