import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { newEndpointId, newWebhookSecret } from '../../src/webhooks/secret.js';
import { BACKENDS, backendSkip } from '../support/backends.js';
import { startServerProcess, waitFor, type ServerProcess } from '../support/process.js';
import { pets, startService, type Service } from '../support/service.js';
import { startReceiver, type Receiver } from '../support/webhook-receiver.js';

/** Delivery to local receivers, a short lease (another instance takes over about a second after a kill), quick retries. */
const ENV = { WEBHOOKS_ALLOW_PRIVATE: 'true', WEBHOOK_LEASE_MS: '1200', WEBHOOK_RETRY_SCHEDULE: '50ms,50ms,50ms,50ms,50ms' };
const CLAIMED = 'webhook endpoint: delivering from this instance';

async function patch(server: ServerProcess, key: string, quantity: number): Promise<void> {
  const res = await fetch(`${server.baseUrl}/v1/inventory/1`, {
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

async function addEndpoint(service: Service, receiver: Receiver) {
  return service.store.webhookEndpoints.addEndpoint({ id: newEndpointId(), url: receiver.url, description: null, secret: newWebhookSecret(), createdAt: new Date() });
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
