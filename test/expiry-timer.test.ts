import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import { isReservationEvent } from '../src/domain/event.js';
import { scheduleExpiry, type ExpiryLog } from '../src/expiry-timer.js';
import type { Store } from '../src/store/store.js';
import { BACKENDS, backendSkip, createTestDatabase } from './support/backends.js';
import { created, newReservation } from './support/reservations.js';
import { itemOf } from './support/store.js';
import { until } from './support/process.js';

/** The expiry timer (decisions 12.4): every instance runs it, the store marks each reservation once. */

const quiet: ExpiryLog = { warn: () => {}, info: () => {} };

async function expiredEvents(store: Store): Promise<string[]> {
  const { items } = await store.events.readEvents(0, 1000);
  return items.filter((e) => isReservationEvent(e) && e.type === 'reservation.expired').map((e) => (isReservationEvent(e) ? e.reservationId : ''));
}

for (const backend of BACKENDS) {
  describe(`The expiry timer on ${backend}`, { skip: await backendSkip(backend) }, () => {
    it('two instances: the hold stops counting at its expiry, and one of them marks it once, with one event', async (t) => {
      const db = await createTestDatabase(backend, t);
      const [one, two] = [await db.open(), await db.open()];
      await one.changes.addItems([{ petId: 1n, quantity: 4, status: 'available' }]);
      const timers = [scheduleExpiry(one.reservations, quiet), scheduleExpiry(two.reservations, quiet)];
      t.after(() => timers.forEach((timer) => timer.stop()));
      const r = created(await one.reservations.create(newReservation([[1n, 3]], { ttlSeconds: 1 })));
      assert.deepEqual(await itemOf(two, 1n), { petId: 1n, quantity: 4, status: 'available', reserved: 3 });
      // A few milliseconds past it: Node's timers may fire up to a millisecond early.
      await sleep(Math.max(0, r.expiresAt.getTime() - Date.now()) + 5);
      // From its expiry on, no read counts it, marked or not.
      assert.deepEqual(await itemOf(two, 1n), { petId: 1n, quantity: 4, status: 'available' });
      await until(async () => (await expiredEvents(one)).length > 0, 'the reservation marked expired');
      // Both timers ran again since: still one event.
      await Promise.all(timers.map((timer) => timer.runNow()));
      assert.deepEqual(await expiredEvents(two), [r.id]);
      assert.equal((await two.reservations.get(r.id))?.status, 'expired');
    });

    it('a reservation that expired while no instance ran is marked at the first run after a start', async (t) => {
      const db = await createTestDatabase(backend, t);
      const store = await db.open();
      await store.changes.addItems([{ petId: 1n, quantity: 4, status: 'available' }]);
      const r = created(await store.reservations.create(newReservation([[1n, 1]], { ttlSeconds: 1 })));
      await sleep(Math.max(0, r.expiresAt.getTime() - Date.now()) + 100);
      assert.deepEqual(await expiredEvents(store), []);
      const timer = scheduleExpiry((await db.open()).reservations, quiet, 60_000);
      t.after(() => timer.stop());
      await until(async () => (await expiredEvents(store)).length > 0, 'marked at start');
      assert.deepEqual(await expiredEvents(store), [r.id]);
    });

    it('a failing store is logged once while it fails, and once when it works again', async () => {
      const lines: string[] = [];
      let fail = true;
      const timer = scheduleExpiry(
        { expireDue: async () => (fail ? Promise.reject(new Error('down')) : []) },
        { warn: (_f, m) => void lines.push(`warn ${m}`), info: (_f, m) => void lines.push(`info ${m}`) },
        60_000,
      );
      await timer.runNow();
      await timer.runNow();
      fail = false;
      await timer.runNow();
      timer.stop();
      assert.deepEqual(lines, ['warn could not expire reservations; retrying', 'info reservations expire again']);
    });
  });
}
