import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { isReservationEvent } from '../src/domain/event.js';
import { BACKENDS, backendSkip } from './support/backends.js';
import { sleep } from './support/process.js';
import { startService, type Service } from './support/service.js';

/**
 * Reservations survive kill -9 (decisions 5.2: a 2xx means it is on disk): after a restart an
 * acknowledged hold still holds and can be sold, a release stays released, and a hold whose
 * expiresAt passed while the service was down is marked expired, once, by the new process.
 */

/** A deadline on waiting for the restarted server's first sweep, not a measure of speed. */
const LIVENESS_MS = 20_000;

async function call(service: Service, method: string, path: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${service.server.baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${service.keys.write}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

for (const backend of BACKENDS) {
  describe(`reservations across kill -9 on ${backend}`, { skip: await backendSkip(backend) }, () => {
    test('held, released and lapsed-while-down reservations are as acknowledged after a restart', async (t) => {
      const service = await startService(t, backend, { items: [{ petId: 1n, quantity: 10, status: 'available' }] });
      const held = await call(service, 'POST', '/v1/reservations', { items: [{ petId: 1, quantity: 3 }], reference: 'order-1' });
      const given = await call(service, 'POST', '/v1/reservations', { items: [{ petId: 1, quantity: 1 }] });
      const lapsing = await call(service, 'POST', '/v1/reservations', { items: [{ petId: 1, quantity: 2 }], ttlSeconds: 2 });
      assert.deepEqual([held.status, given.status, lapsing.status], [201, 201, 201]);
      assert.equal((await call(service, 'POST', `/v1/reservations/${String(given.body['id'])}/release`)).status, 200);

      service.server.proc.kill('SIGKILL');
      await service.server.exited;
      // Down across the lapsing one's expiry: no process was there to mark it.
      const expiresAt = Date.parse(String(lapsing.body['expiresAt']));
      while (Date.now() <= expiresAt + 100) await sleep(100);
      await service.restart();

      assert.deepEqual((await call(service, 'GET', `/v1/reservations/${String(held.body['id'])}`)).body, held.body, 'the hold is as it was acknowledged');
      assert.equal((await call(service, 'GET', `/v1/reservations/${String(given.body['id'])}`)).body['status'], 'released');
      const entry = (await call(service, 'GET', '/v1/inventory/1')).body;
      assert.deepEqual([entry['quantity'], entry['reserved'], entry['available']], [10, 3, 7], 'only the live hold counts');

      const lapsedId = String(lapsing.body['id']);
      const expiredEvents = async () => (await service.store.events.readEvents(0, 100)).items.filter((e) => isReservationEvent(e) && e.type === 'reservation.expired' && e.reservationId === lapsedId);
      const until = Date.now() + LIVENESS_MS;
      while ((await expiredEvents()).length === 0 && Date.now() < until) await sleep(50);
      const events = await expiredEvents();
      assert.equal(events.length, 1, 'marked expired, once, by the restarted process');
      assert.equal(events[0]!.source, 'expiry');

      const sold = await call(service, 'POST', `/v1/reservations/${String(held.body['id'])}/commit`);
      assert.equal(sold.status, 200);
      assert.equal(sold.body['status'], 'committed');
      const after = (await call(service, 'GET', '/v1/inventory/1')).body;
      assert.deepEqual([after['quantity'], after['reserved'], after['available']], [7, 0, 7]);
      const late = await call(service, 'POST', `/v1/reservations/${lapsedId}/commit`);
      assert.deepEqual([late.status, late.body['code'], late.body['status']], [409, 'reservation_not_active', 409]);
      assert.deepEqual(Object.keys(late.body).sort(), ['code', 'message', 'status']);
    });
  });
}
