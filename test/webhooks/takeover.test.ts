import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { newEndpointId, newWebhookSecret } from '../../src/webhooks/secret.js';
import { BACKENDS, backendSkip } from '../support/backends.js';
import { startServerProcess, until, waitFor, type ServerProcess } from '../support/process.js';
import { pets, startService, type Service } from '../support/service.js';
import { startReceiver, type Received, type Receiver } from '../support/webhook-receiver.js';

/** Delivery to local receivers, a short lease (another instance takes over about a second after a kill), quick retries. */
const ENV = { WEBHOOKS_ALLOW_PRIVATE: 'true', WEBHOOK_LEASE_MS: '1200', WEBHOOK_RETRY_SCHEDULE: '50ms,50ms,50ms,50ms,50ms' };
const CLAIMED = 'webhook endpoint: delivering from this instance';

async function patch(server: ServerProcess, key: string, quantity: number, petId = 1): Promise<void> {
  const res = await fetch(`${server.baseUrl}/v1/inventory/${petId}`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ quantity }),
  });
  assert.equal(res.status, 200, await res.text());
}

/** The log's event ids after `after`, in order, as the test's own store reads them. */
async function loggedIds(service: Service, after: number): Promise<string[]> {
  return (await service.store.events.readEvents(after, 1000)).items.map((e) => `evt_${e.seq}`);
}

/** The ids in the order they first arrived. */
function firstArrivals(receiver: Receiver): string[] {
  return [...new Set(receiver.received.map((r) => String(r.headers['webhook-id'])))];
}

async function addEndpoint(service: Service, receiver: Receiver, maxInFlight = 1) {
  return service.store.webhookEndpoints.addEndpoint({ id: newEndpointId(), url: receiver.url, description: null, secret: newWebhookSecret(), createdAt: new Date(), maxInFlight });
}

const petOf = (r: Received) => Number(r.json.data.petId);

/** Asserts that each pet's events were first seen in seq order. */
function assertPerPetOrder(received: readonly Received[]): void {
  const seen = new Set<string>();
  const lastOf = new Map<number, number>();
  for (const r of received) {
    const id = String(r.headers['webhook-id']);
    if (seen.has(id)) continue;
    seen.add(id);
    const seq = r.json.seq!;
    assert.ok((lastOf.get(petOf(r)) ?? 0) < seq, `pet ${petOf(r)}: seq ${seq} first seen after a later one`);
    lastOf.set(petOf(r), seq);
  }
}

for (const backend of BACKENDS) {
  describe(`webhooks across a crash on ${backend}`, { skip: await backendSkip(backend) }, () => {
    test('kill -9 while a delivery is in flight loses nothing: after the restart it is sent again with the same webhook-id, then the rest in order', { timeout: 60_000 }, async (t) => {
      const receiver = await startReceiver(t);
      const service = await startService(t, backend, { items: pets(1), env: ENV });
      const endpoint = await addEndpoint(service, receiver);
      receiver.answer = (_r, i) => (i === 4 ? 'hang' : { status: 204 });
      for (let q = 1; q <= 10; q++) await patch(service.server, service.keys.write, q);
      await receiver.waitFor(5);
      const inFlight = String(receiver.received[4]!.headers['webhook-id']);
      service.server.proc.kill('SIGKILL');
      await service.server.exited;
      receiver.answer = () => ({ status: 204 });
      await service.restart();
      const ids = await loggedIds(service, endpoint.deliveredSeq);
      assert.equal(ids.length, 10);
      await receiver.waitFor(() => firstArrivals(receiver).length === 10 && receiver.received.at(-1)!.headers['webhook-id'] === ids.at(-1));
      assert.deepEqual(firstArrivals(receiver), ids, 'every committed event, first seen in seq order');
      const afterRestart = receiver.received.slice(5).map((r) => String(r.headers['webhook-id']));
      assert.ok(afterRestart.includes(inFlight), 'the delivery in flight was sent again, with the same webhook-id');
      // After the restart the deliveries go on in seq order from the last recorded place (at or before the one in flight).
      const seqs = afterRestart.map((id) => Number(id.slice(4)));
      assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b));
      assert.ok(receiver.received.every((r) => receiver.verifies(r, endpoint.secret)));
    });

    test('kill -9 with a window open loses nothing and sends again only what was in flight, with its webhook-id', { timeout: 60_000 }, async (t) => {
      const receiver = await startReceiver(t);
      const service = await startService(t, backend, { items: pets(6), env: ENV });
      const endpoint = await addEndpoint(service, receiver, 4);
      // Pet 1's first event is never answered: its next waits behind it, the other pets' go on.
      receiver.answer = (r) => (petOf(r) === 1 ? 'hang' : { status: 204 });
      const order = [1, 2, 3, 4, 5, 6, 2, 3, 4, 5, 6, 1];
      for (const [i, petId] of order.entries()) await patch(service.server, service.keys.write, i + 1, petId);
      const ids = await loggedIds(service, endpoint.deliveredSeq);
      await receiver.waitFor(11);
      // Every delivery recorded: the place stays below pet 1's first event, the other pets' above it.
      await until(async () => (await service.store.webhookEndpoints.getEndpoint(endpoint.id))!.deliveredAbove.length === 10);
      const before = receiver.received.length;
      service.server.proc.kill('SIGKILL');
      await service.server.exited;
      receiver.answer = () => ({ status: 204 });
      await service.restart();
      await receiver.waitFor(before + 2);
      const again = receiver.received.slice(before).map((r) => String(r.headers['webhook-id']));
      assert.deepEqual(again, [ids[0], ids[11]], 'only the event in flight, with its webhook-id, then the one held back behind it');
      assert.deepEqual(new Set(receiver.received.map((r) => String(r.headers['webhook-id']))), new Set(ids), 'nothing lost');
      assertPerPetOrder(receiver.received);
      await until(async () => (await service.store.webhookEndpoints.getEndpoint(endpoint.id))!.deliveredSeq === Number(ids[11]!.slice(4)));
    });
  });
}

describe('webhooks with two instances on one PostgreSQL database', { skip: BACKENDS.includes('postgres') ? await backendSkip('postgres') : 'TEST_BACKENDS leaves PostgreSQL out' }, () => {
  test('one instance delivers each event once; when it is killed, the other takes over and nothing is lost', { timeout: 60_000 }, async (t) => {
    const receiver = await startReceiver(t);
    const service = await startService(t, 'postgres', { items: pets(1), env: ENV });
    const other = await startServerProcess(t, { DATABASE_URL: service.db.databaseUrl, INVENTORY_ENV: 'production', ...ENV });
    const endpoint = await addEndpoint(service, receiver);
    const instances = [service.server, other];
    const claimed = (server: ServerProcess) => server.stdout().split('\n').filter((l) => l.includes(CLAIMED)).length;
    await waitFor(() => instances.some((s) => claimed(s) > 0), 20_000).catch((err: unknown) => assert.fail(`no instance claimed the endpoint: ${String(err)}`));
    for (let q = 1; q <= 20; q++) await patch(instances[q % 2]!, service.keys.write, q);
    const first = await loggedIds(service, endpoint.deliveredSeq);
    await receiver.waitFor(20);
    assert.deepEqual(receiver.received.map((r) => String(r.headers['webhook-id'])), first, 'each event once, in order, in the normal case');
    assert.equal(instances.filter((s) => claimed(s) > 0).length, 1, 'exactly one instance held the endpoint');

    const holder = instances.find((s) => claimed(s) > 0)!;
    const survivor = instances.find((s) => s !== holder)!;
    holder.proc.kill('SIGKILL');
    await holder.exited;
    const killedAt = Date.now();
    for (let q = 21; q <= 30; q++) await patch(survivor, service.keys.write, q);
    const all = await loggedIds(service, endpoint.deliveredSeq);
    await receiver.waitFor(() => firstArrivals(receiver).length === 30);
    assert.deepEqual(firstArrivals(receiver), all, 'nothing lost across the takeover, first seen in seq order');
    assert.equal(claimed(survivor), 1, 'the survivor took the endpoint over');
    t.diagnostic(`the survivor delivered the first event after the kill ${receiver.received.find((r) => r.at > killedAt)!.at - killedAt} ms after it (WEBHOOK_LEASE_MS ${ENV.WEBHOOK_LEASE_MS})`);
  });
});

describe('webhooks by pet with two instances on one PostgreSQL database', { skip: BACKENDS.includes('postgres') ? await backendSkip('postgres') : 'TEST_BACKENDS leaves PostgreSQL out' }, () => {
  test('each event once in the normal case; after the holder is killed the other takes over keeping each pet\'s order', { timeout: 60_000 }, async (t) => {
    const receiver = await startReceiver(t);
    const service = await startService(t, 'postgres', { items: pets(4), env: ENV });
    const other = await startServerProcess(t, { DATABASE_URL: service.db.databaseUrl, INVENTORY_ENV: 'production', ...ENV });
    const endpoint = await addEndpoint(service, receiver, 4);
    receiver.answer = () => ({ status: 204, delayMs: Math.floor(Math.random() * 10) });
    const instances = [service.server, other];
    const claimed = (server: ServerProcess) => server.stdout().split('\n').filter((l) => l.includes(CLAIMED)).length;
    await waitFor(() => instances.some((s) => claimed(s) > 0), 20_000).catch((err: unknown) => assert.fail(`no instance claimed the endpoint: ${String(err)}`));
    for (let q = 1; q <= 20; q++) await patch(instances[q % 2]!, service.keys.write, q, (q % 4) + 1);
    const first = await loggedIds(service, endpoint.deliveredSeq);
    await receiver.waitFor(20);
    // Answered, then recorded (a flush follows within a tenth of a second) before the kill.
    await until(async () => (await service.store.webhookEndpoints.getEndpoint(endpoint.id))!.deliveredSeq === Number(first.at(-1)!.slice(4)));
    assert.deepEqual(receiver.received.map((r) => String(r.headers['webhook-id'])).sort(), [...first].sort(), 'each event once in the normal case');
    assertPerPetOrder(receiver.received);
    assert.equal(instances.filter((s) => claimed(s) > 0).length, 1, 'exactly one instance held the endpoint');

    const holder = instances.find((s) => claimed(s) > 0)!;
    const survivor = instances.find((s) => s !== holder)!;
    for (let q = 21; q <= 30; q++) await patch(survivor, service.keys.write, q, (q % 4) + 1);
    holder.proc.kill('SIGKILL');
    await holder.exited;
    for (let q = 31; q <= 40; q++) await patch(survivor, service.keys.write, q, (q % 4) + 1);
    const all = await loggedIds(service, endpoint.deliveredSeq);
    await receiver.waitFor(() => new Set(receiver.received.map((r) => String(r.headers['webhook-id']))).size === 40);
    assert.deepEqual([...new Set(receiver.received.map((r) => String(r.headers['webhook-id'])))].sort(), [...all].sort(), 'nothing lost across the takeover');
    assertPerPetOrder(receiver.received);
    assert.equal(claimed(survivor), 1, 'the survivor took the endpoint over');
  });
});
