import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import type { WebhookEndpoint } from '../../src/domain/webhook.js';
import { webhookList } from '../../src/operations/list-webhooks.js';
import { newEndpointId, newWebhookSecret } from '../../src/webhooks/secret.js';
import { buildTestApp, type TestApp } from '../support/app.js';
import { BACKENDS, backendSkip } from '../support/backends.js';
import { until } from '../support/process.js';
import { pets } from '../support/service.js';
import { stockEvents } from '../support/store.js';
import { startReceiver, type Received, type Receiver } from '../support/webhook-receiver.js';

/** An app of eight pets that may deliver to local receivers. */
async function deliveringApp(t: TestContext, backend: (typeof BACKENDS)[number], config: Record<string, string> = {}): Promise<TestApp> {
  return buildTestApp(t, {
    backend,
    items: pets(8),
    config: { WEBHOOKS_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_SCHEDULE: '30ms,30ms,30ms', WEBHOOK_TIMEOUT_MS: '5000', ...config },
  });
}

async function endpointFor(api: TestApp, receiver: Receiver, maxInFlight: number): Promise<WebhookEndpoint> {
  const endpoint = await api.store.webhookEndpoints.addEndpoint({ id: newEndpointId(), url: receiver.url, description: null, secret: newWebhookSecret(), createdAt: new Date(), maxInFlight });
  await api.app.webhookDispatcher.leaseNow();
  return endpoint;
}

/** Sets the quantity of each pet named, in turn, through the API; the n-th change gets quantity n. */
async function changes(api: TestApp, petIds: readonly number[]): Promise<void> {
  let quantity = 0;
  for (const petId of petIds) {
    const res = await api.request({ method: 'PATCH', url: `/v1/inventory/${petId}`, key: api.keys.write, body: { quantity: ++quantity } });
    assert.equal(res.status, 200);
  }
}

/** Pet ids in a shuffled order that names each of `count` pets `times` times. */
function shuffledPets(count: number, times: number): number[] {
  const ids = Array.from({ length: count * times }, (_, i) => (i % count) + 1);
  for (let i = ids.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [ids[i], ids[j]] = [ids[j]!, ids[i]!];
  }
  return ids;
}

const petOf = (r: Received) => Number(r.json.data.petId);
const seqOf = (r: Received) => r.json.seq!;

/** The requests of each pet, in the order they arrived. */
function byPet(received: readonly Received[]): Map<number, Received[]> {
  const pets = new Map<number, Received[]>();
  for (const r of received) pets.set(petOf(r), [...(pets.get(petOf(r)) ?? []), r]);
  return pets;
}

/** Asserts that each pet's events arrived in seq order, each only after the one before it was answered. */
function assertPerPetOrder(received: readonly Received[]): void {
  for (const [pet, requests] of byPet(received)) {
    const seqs = requests.map(seqOf);
    assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b), `pet ${pet}'s events in seq order`);
    for (let i = 1; i < requests.length; i++) {
      assert.ok(requests[i]!.arrived > requests[i - 1]!.answered!, `pet ${pet}: seq ${seqs[i]} was sent only after seq ${seqs[i - 1]} was answered`);
    }
  }
}

for (const backend of BACKENDS) {
  describe(`webhook deliveries by pet on ${backend}`, { skip: await backendSkip(backend) }, () => {
    test('a receiver answering in random order and delays gets each pet\'s events in seq order, one at a time, at most N open', async (t) => {
      const receiver = await startReceiver(t);
      const api = await deliveringApp(t, backend);
      const endpoint = await endpointFor(api, receiver, 4);
      receiver.answer = () => ({ status: 200, delayMs: Math.floor(Math.random() * 15) });
      const order = shuffledPets(8, 8);
      await changes(api, order);
      await receiver.waitFor(order.length);
      const events = stockEvents((await api.store.events.readEvents(endpoint.deliveredSeq, 1000)).items);
      assert.deepEqual(receiver.received.map(seqOf).sort((a, b) => a - b), events.map((e) => e.seq), 'every event once');
      assertPerPetOrder(receiver.received);
      assert.ok(receiver.concurrency.max <= 4, `at most 4 open, saw ${receiver.concurrency.max}`);
      assert.ok(receiver.received.every((r) => receiver.verifies(r, endpoint.secret)));
      await until(async () => (await api.store.webhookEndpoints.getEndpoint(endpoint.id))!.deliveredSeq === events.at(-1)!.seq);
      assert.deepEqual((await api.store.webhookEndpoints.getEndpoint(endpoint.id))!.deliveredAbove, [], 'all delivered: nothing above the place');
    });

    test('N requests are opened at once to different pets, never more', async (t) => {
      const receiver = await startReceiver(t);
      const api = await deliveringApp(t, backend);
      await endpointFor(api, receiver, 3);
      // Nothing is answered until three are open: were the worker to open fewer, the test would never end.
      let open: () => void = () => {};
      const threeOpen = new Promise<void>((resolve) => (open = resolve));
      receiver.answer = () => {
        if (receiver.concurrency.now >= 3) open();
        return { status: 204, until: threeOpen };
      };
      await changes(api, [1, 2, 3, 4, 5, 6]);
      await receiver.waitFor(6);
      assert.equal(receiver.concurrency.max, 3);
      assert.deepEqual(new Set(receiver.received.slice(0, 3).map(petOf)).size, 3, 'three different pets');
    });

    test('a pet whose receiver answers 500 holds back only its own later events', async (t) => {
      const receiver = await startReceiver(t);
      const api = await deliveringApp(t, backend, { WEBHOOK_RETRY_SCHEDULE: '1h' });
      const endpoint = await endpointFor(api, receiver, 4);
      receiver.answer = (r) => ({ status: petOf(r) === 2 ? 500 : 200, delayMs: Math.floor(Math.random() * 5) });
      const order = shuffledPets(4, 5);
      await changes(api, order);
      const events = stockEvents((await api.store.events.readEvents(endpoint.deliveredSeq, 1000)).items);
      const others = events.filter((e) => e.petId !== 2n);
      const firstOfPet2 = events.find((e) => e.petId === 2n)!;
      await receiver.waitFor((received) => received.filter((r) => petOf(r) !== 2).length === others.length);
      assertPerPetOrder(receiver.received);
      assert.deepEqual(receiver.received.filter((r) => petOf(r) === 2).map(seqOf), [firstOfPet2.seq], 'pet 2: its first event, once, then its retry waits');
      const stands = await until(async () => {
        const e = (await api.store.webhookEndpoints.getEndpoint(endpoint.id))!;
        return e.deliveredAbove.length === others.filter((o) => o.seq > firstOfPet2.seq).length;
      }).then(() => api.store.webhookEndpoints.getEndpoint(endpoint.id));
      assert.equal(stands!.deliveredSeq, firstOfPet2.seq - 1, 'the place stops below the failing event');
      assert.deepEqual(stands!.retrying.map((r) => [r.seq, r.failures]), [[firstOfPet2.seq, 1]]);
      assert.equal(stands!.nextAttemptAt, null, 'the endpoint itself is not paused');
      assert.equal(stands!.failures, 1);
      const listed = await webhookList(api.store);
      assert.deepEqual([listed.items[0]!.retrying, listed.items[0]!.maxInFlight], [1, 4]);
    });

    test('with maxInFlight 1 every event goes in seq order, one at a time, a failed one before all that follow', async (t) => {
      const receiver = await startReceiver(t);
      const api = await deliveringApp(t, backend);
      const endpoint = await endpointFor(api, receiver, 1);
      receiver.answer = (r, i) => ({ status: i === 3 ? 503 : 200, delayMs: Math.floor(Math.random() * 10) });
      const order = shuffledPets(4, 4);
      await changes(api, order);
      await receiver.waitFor(order.length + 1);
      const events = stockEvents((await api.store.events.readEvents(endpoint.deliveredSeq, 1000)).items);
      const seqs = receiver.received.map(seqOf);
      assert.deepEqual(seqs, [...events.slice(0, 4), ...events.slice(3)].map((e) => e.seq), 'strict seq order, the failed one again before the next');
      assert.equal(receiver.concurrency.max, 1);
    });

    test('a 429 with Retry-After pauses the whole endpoint: no other pet\'s event goes before its retry', async (t) => {
      const receiver = await startReceiver(t);
      const api = await deliveringApp(t, backend);
      const endpoint = await endpointFor(api, receiver, 8);
      receiver.answer = (_r, i) => (i === 0 ? { status: 429, headers: { 'retry-after': '1' } } : { status: 200 });
      await changes(api, [1]);
      await until(async () => (await api.store.webhookEndpoints.getEndpoint(endpoint.id))!.nextAttemptAt !== null);
      await changes(api, [2, 3, 4]);
      await receiver.waitFor(5);
      assert.equal(receiver.received[1]!.headers['webhook-id'], receiver.received[0]!.headers['webhook-id'], 'the retry first');
      assert.deepEqual(new Set(receiver.received.slice(2).map(petOf)), new Set([2, 3, 4]));
    });
  });
}
