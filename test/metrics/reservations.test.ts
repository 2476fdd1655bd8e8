import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ServiceMetrics } from '../../src/metrics/service-metrics.js';
import { buildTestApp, type TestApp } from '../support/app.js';
import { BACKENDS, backendSkip } from '../support/backends.js';
import { sample } from '../support/prometheus.js';

function reserve(api: TestApp, items: { petId: number; quantity: number }[], ttlSeconds = 900) {
  return api.request({ method: 'POST', url: '/v1/reservations', key: api.keys.write, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ items, ttlSeconds }) });
}

for (const backend of BACKENDS) {
  describe(`reservation metrics on ${backend}`, { skip: await backendSkip(backend) }, () => {
    test('active reservations and held units as the store has them when scraped; reservations this process expired', async (t) => {
      const metrics = new ServiceMetrics();
      const api = await buildTestApp(t, {
        backend,
        items: [{ petId: 1n, quantity: 10, status: 'available' }, { petId: 2n, quantity: 5, status: 'available' }],
        metrics,
      });
      const figures = async () => {
        const text = await metrics.render();
        return [sample(text, 'inventory_reservations_active'), sample(text, 'inventory_reservations_held_units'), sample(text, 'inventory_reservations_expired_total')];
      };
      assert.deepEqual(await figures(), [0, 0, 0]);

      const kept = await reserve(api, [{ petId: 1, quantity: 3 }, { petId: 2, quantity: 2 }]);
      assert.equal(kept.status, 201);
      const lapsing = await reserve(api, [{ petId: 1, quantity: 4 }], 1);
      assert.equal(lapsing.status, 201);
      assert.deepEqual(await figures(), [2, 9, 0]);

      // The app's timer marks the lapsed one within about a second; this waits however long it takes.
      while ((await figures())[2] === 0) await sleep(50);
      assert.deepEqual(await figures(), [1, 5, 1], 'the expired one holds nothing and is counted once');

      const id = kept.json<{ id: string }>().id;
      assert.equal((await api.request({ method: 'POST', url: `/v1/reservations/${id}/commit`, key: api.keys.write })).status, 200);
      assert.deepEqual(await figures(), [0, 0, 1], 'a committed reservation holds nothing');
    });
  });
}
