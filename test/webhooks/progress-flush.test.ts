import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { DeliveryProgress } from '../../src/domain/webhook.js';
import { FLUSH_EVERY_MS } from '../../src/webhooks/endpoint-worker.js';
import { newEndpointId, newWebhookSecret } from '../../src/webhooks/secret.js';
import { buildTestApp } from '../support/app.js';
import { BACKENDS, backendSkip } from '../support/backends.js';
import { sleep, until } from '../support/process.js';
import { pets } from '../support/service.js';
import { startReceiver } from '../support/webhook-receiver.js';

for (const backend of BACKENDS) {
  describe(`webhook progress records on ${backend}`, { skip: await backendSkip(backend) }, () => {
    test('a trickle of changes is recorded at most once a flush period, each attempt once, and the place ends at the last event', async (t) => {
      const receiver = await startReceiver(t);
      const api = await buildTestApp(t, { backend, items: pets(8), config: { WEBHOOKS_ALLOW_PRIVATE: 'true', WEBHOOK_TIMEOUT_MS: '5000' } });
      // Every record the worker makes, with when it began and the attempts it carried.
      const records: { at: number; attempts: number }[] = [];
      const deliveries = api.store.webhookDeliveries;
      const record = deliveries.recordProgress.bind(deliveries);
      deliveries.recordProgress = (id: string, holder: string, progress: DeliveryProgress, claimedAt?: Date) => {
        records.push({ at: Date.now(), attempts: progress.attempts.length });
        return record(id, holder, progress, claimedAt);
      };
      const endpoint = await api.store.webhookEndpoints.addEndpoint({ id: newEndpointId(), url: receiver.url, description: null, secret: newWebhookSecret(), createdAt: new Date(), maxInFlight: 4 });
      await api.app.webhookDispatcher.leaseNow();
      // Ten changes 10 ms apart: each is delivered before the next is made, so the worker is idle between them.
      const count = 10;
      for (let i = 1; i <= count; i++) {
        const res = await api.request({ method: 'PATCH', url: `/v1/inventory/${(i % 8) + 1}`, key: api.keys.write, body: { quantity: i } });
        assert.equal(res.status, 200);
        await receiver.waitFor(i);
        await sleep(10);
      }
      const head = (await api.store.events.readEvents(endpoint.deliveredSeq, 1000)).head;
      await until(async () => (await api.store.webhookEndpoints.getEndpoint(endpoint.id))!.deliveredSeq === head);

      const flushes = records.filter((r) => r.attempts > 0);
      assert.equal(flushes.reduce((sum, r) => sum + r.attempts, 0), count, 'every attempt recorded once');
      for (let i = 1; i < flushes.length; i++) {
        // The worker starts a record only a period after the last one ended (recording each delivery at once, they came
        // as often as the changes): a millisecond of slack for the clock's rounding.
        assert.ok(flushes[i]!.at - flushes[i - 1]!.at >= FLUSH_EVERY_MS - 1, `records ${i - 1} and ${i} ${flushes[i]!.at - flushes[i - 1]!.at} ms apart`);
      }
      assert.equal((await api.store.webhookEndpoints.listDeliveries(endpoint.id, 100)).length, count, 'the delivery log holds each attempt');
    });
  });
}
