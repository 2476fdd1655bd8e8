import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ServiceMetrics } from '../../src/metrics/service-metrics.js';
import { newEndpointId, newWebhookSecret } from '../../src/webhooks/secret.js';
import { buildTestApp } from '../support/app.js';
import { BACKENDS, backendSkip } from '../support/backends.js';
import { sample } from '../support/prometheus.js';
import { startReceiver } from '../support/webhook-receiver.js';

for (const backend of BACKENDS) {
  describe(`webhook metrics on ${backend}`, { skip: await backendSkip(backend) }, () => {
    test("each endpoint's attempts by result and its backlog, whether it is enabled, and the delivery latency; never a secret", async (t) => {
      const receiver = await startReceiver(t);
      const metrics = new ServiceMetrics();
      const api = await buildTestApp(t, {
        backend,
        items: [{ petId: 1n, quantity: 0, status: 'available' }],
        metrics,
        config: { WEBHOOKS_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_SCHEDULE: '20ms,20ms' },
      });
      const endpoint = await api.store.webhookEndpoints.addEndpoint({ id: newEndpointId(), url: receiver.url, description: null, secret: newWebhookSecret(), createdAt: new Date() });
      const parked = await api.store.webhookEndpoints.addEndpoint({ id: newEndpointId(), url: receiver.url, description: null, secret: newWebhookSecret(), createdAt: new Date() });
      await api.store.webhookEndpoints.disableEndpoint(parked.id, 'parked by the test');
      await api.app.webhookDispatcher.leaseNow();
      receiver.answer = (_r, i) => (i === 0 ? { status: 500 } : { status: 204 });
      for (const quantity of [1, 2, 3]) {
        assert.equal((await api.request({ method: 'PATCH', url: '/v1/inventory/1', key: api.keys.write, body: { quantity } })).status, 200);
      }
      await receiver.waitFor(4);
      // The fourth request has arrived; its answer is counted once the dispatcher has read it.
      let text = await metrics.render();
      const of = (result: string) => sample(text, 'inventory_webhook_attempts_total', { endpoint: endpoint.id, result });
      while (of('delivered') !== 3) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        text = await metrics.render();
      }
      assert.deepEqual([of('delivered'), of('http_error')], [3, 1]);
      assert.equal(sample(text, 'inventory_webhook_delivery_latency_seconds_count'), 3);
      assert.equal(sample(text, 'inventory_webhook_backlog_events', { endpoint: parked.id }), 3, 'the disabled endpoint is three events behind');
      assert.equal(sample(text, 'inventory_webhook_endpoint_enabled', { endpoint: parked.id }), 0);
      // Recorded by the endpoint's next flush: the failed event was delivered on its retry, nothing waits.
      while (sample(await metrics.render(), 'inventory_webhook_retrying_events', { endpoint: endpoint.id }) !== 0) await new Promise((resolve) => setTimeout(resolve, 20));
      assert.equal(sample(text, 'inventory_webhook_endpoint_enabled', { endpoint: endpoint.id }), 1);
      for (const secret of [endpoint.secret, parked.secret]) assert.ok(!text.includes(secret.slice(6)), 'no secret in the metrics');
    });
  });
}
