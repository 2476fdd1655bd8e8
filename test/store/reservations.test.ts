import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import { isReservationEvent, type InventoryEvent } from '../../src/domain/event.js';
import type { InventoryItem } from '../../src/schemas/inventory.js';
import { BACKENDS, backendSkip, openTestStore } from '../support/backends.js';
import { created, newReservation, testOrigin } from '../support/reservations.js';
import { adjustment, change, itemOf, logAfter as eventsAfter } from '../support/store.js';

/** The store's reservations port (decisions 12), the same contract on every backend. */

function item(petId: bigint, quantity: number): InventoryItem {
  return { petId, quantity, status: 'available' };
}

/** An event as the assertions compare it: its type, and what it says of pets. */
function summary(e: InventoryEvent): string {
  if (isReservationEvent(e)) return `${e.type} ${e.status} ${e.items.map((i) => `${i.petId}x${i.quantity}`).join(',')} ${e.source}`;
  return `${e.type} pet ${e.petId} ${e.previousQuantity}->${e.quantity} ${e.reason ?? '-'}`;
}

for (const backend of BACKENDS) {
  describe(`Reservations on ${backend}`, { skip: await backendSkip(backend) }, () => {
    it('holds every item or none: reserved and available move, one event names every pet, the store version moves', async (t) => {
      const store = await openTestStore(backend, t);
      await store.changes.addItems([item(1n, 10), item(2n, 3)]);
      const head = await store.events.head();
      const version = await store.entries.readVersion();
      const r = created(await store.reservations.create(newReservation([[1n, 4], [2n, 3]], { reference: 'order-1' })));
      assert.equal(r.status, 'active');
      assert.equal(r.reference, 'order-1');
      assert.ok(r.expiresAt.getTime() - r.createdAt.getTime() === 900_000);
      assert.deepEqual(await itemOf(store, 1n), { ...item(1n, 10), reserved: 4 });
      assert.deepEqual(await itemOf(store, 2n), { ...item(2n, 3), reserved: 3 });
      assert.deepEqual(await store.entries.listInventory(), [{ ...item(1n, 10), reserved: 4 }, { ...item(2n, 3), reserved: 3 }]);
      assert.ok((await store.entries.readVersion()) > version);
      const changes = await store.entries.changesSince(version);
      assert.deepEqual(
        changes.items.map((i) => i.petId),
        [1n, 2n],
      );
      assert.deepEqual((await eventsAfter(store, head)).map(summary), ['reservation.created active 1x4,2x3 api']);
      assert.deepEqual(await store.reservations.get(r.id), r);
    });

    it('refuses the first item without an entry or without enough available; nothing is held, nothing appended', async (t) => {
      const store = await openTestStore(backend, t);
      await store.changes.addItems([item(1n, 10), item(2n, 3)]);
      created(await store.reservations.create(newReservation([[2n, 2]])));
      const head = await store.events.head();
      assert.deepEqual(await store.reservations.create(newReservation([[1n, 1], [2n, 2]])), {
        kind: 'insufficient_stock',
        index: 1,
        petId: 2n,
        quantity: 3,
        reserved: 2,
        available: 1,
        replayed: false,
      });
      assert.deepEqual(await store.reservations.create(newReservation([[1n, 1], [9n, 1], [2n, 5]])), { kind: 'not_found', index: 1, petId: 9n, replayed: false });
      assert.deepEqual(await itemOf(store, 1n), item(1n, 10));
      assert.equal(await store.events.head(), head);
      assert.equal((await store.reservations.list({ limit: 10 })).length, 1);
    });

    it('commit sells what was held: counts down, a history row reason sold and an inventory.updated per pet, then reservation.committed', async (t) => {
      const store = await openTestStore(backend, t);
      await store.changes.addItems([item(1n, 10), item(2n, 3)]);
      const r = created(await store.reservations.create(newReservation([[1n, 4], [2n, 1]])));
      const head = await store.events.head();
      const ended = await store.reservations.end(r.id, 'commit', testOrigin({ requestId: 'req-commit' }));
      assert.equal(ended.kind, 'ended');
      assert.equal(ended.kind === 'ended' && ended.reservation.status, 'committed');
      assert.deepEqual(await itemOf(store, 1n), item(1n, 6));
      assert.deepEqual(await itemOf(store, 2n), item(2n, 2));
      assert.deepEqual((await eventsAfter(store, head)).map(summary), [
        'inventory.updated pet 1 10->6 sold',
        'inventory.updated pet 2 3->2 sold',
        'reservation.committed committed 1x4,2x1 api',
      ]);
      const history = (await store.history.listHistory(1n, { limit: 10 }))!;
      assert.deepEqual(
        history.map((h) => [h.previousQuantity, h.quantity, h.reason, h.requestId]),
        [[10, 6, 'sold', 'req-commit']],
      );
      // Again: the same answer, nothing written.
      const again = await store.reservations.end(r.id, 'commit', testOrigin());
      assert.equal(again.kind, 'already');
      assert.equal((await store.history.listHistory(1n, { limit: 10 }))!.length, 1);
      const release = await store.reservations.end(r.id, 'release', testOrigin());
      assert.equal(release.kind, 'not_active');
      assert.equal(release.kind === 'not_active' && release.reservation.status, 'committed');
      assert.deepEqual(await store.reservations.end('res_none', 'commit', testOrigin()), { kind: 'not_found' });
    });

    it('release gives the holds back; again is the same answer; a released one cannot be committed', async (t) => {
      const store = await openTestStore(backend, t);
      await store.changes.addItems([item(1n, 2)]);
      const r = created(await store.reservations.create(newReservation([[1n, 2]])));
      const head = await store.events.head();
      assert.equal((await store.reservations.end(r.id, 'release', testOrigin())).kind, 'ended');
      assert.deepEqual(await itemOf(store, 1n), item(1n, 2));
      assert.equal((await store.reservations.end(r.id, 'release', testOrigin())).kind, 'already');
      const commit = await store.reservations.end(r.id, 'commit', testOrigin());
      assert.equal(commit.kind === 'not_active' && commit.reservation.status, 'released');
      assert.deepEqual((await eventsAfter(store, head)).map(summary), ['reservation.released released 1x2 api']);
      assert.equal((await store.reservations.get(r.id))?.status, 'released');
    });

    it('an expired hold counts for no read from its expiry, and the sweep marks it once, with its event', async (t) => {
      const store = await openTestStore(backend, t);
      await store.changes.addItems([item(1n, 5), item(2n, 5)]);
      const version = await store.entries.readVersion();
      const before = await store.entries.changesSince(version);
      assert.equal(before.lapsed, undefined);
      const r = created(await store.reservations.create(newReservation([[1n, 3]], { ttlSeconds: 1 })));
      created(await store.reservations.create(newReservation([[2n, 1]])));
      const held = await store.entries.changesSince(-1);
      assert.equal(held.lapsed, undefined);
      await sleep(Math.max(0, r.expiresAt.getTime() - Date.now()) + 50);
      // Not marked yet, and no read counts it.
      assert.deepEqual(await itemOf(store, 1n), item(1n, 5));
      assert.deepEqual(await store.entries.listInventory(), [item(1n, 5), { ...item(2n, 5), reserved: 1 }]);
      assert.deepEqual(await store.entries.listInventoryPage(undefined, 1), [item(1n, 5)]);
      assert.equal((await store.reservations.get(r.id))?.status, 'expired');
      assert.deepEqual((await store.reservations.list({ status: 'active', limit: 10 })).length, 1);
      assert.deepEqual((await store.reservations.held()).units, 1);
      const lapsedRead = await store.entries.changesSince(held.version);
      assert.equal(lapsedRead.version, held.version);
      assert.ok(lapsedRead.lapsed, 'the read says it left a hold out');
      assert.deepEqual(lapsedRead.items, [item(1n, 5)]);
      const head = await store.events.head();
      const marked = await Promise.all([store.reservations.expireDue(), store.reservations.expireDue()]);
      assert.deepEqual(
        marked.flat().map((m) => [m.id, m.status]),
        [[r.id, 'expired']],
      );
      assert.deepEqual(await store.reservations.expireDue(), []);
      assert.deepEqual((await eventsAfter(store, head)).map(summary), ['reservation.expired expired 1x3 expiry']);
      assert.equal((await store.entries.changesSince(-1)).lapsed, undefined);
      const commit = await store.reservations.end(r.id, 'commit', testOrigin());
      assert.equal(commit.kind === 'not_active' && commit.reservation.status, 'expired');
    });

    it('a new reservation takes stock a lapsed hold no longer holds, the lapsed one marked first', async (t) => {
      const store = await openTestStore(backend, t);
      await store.changes.addItems([item(1n, 3)]);
      const r = created(await store.reservations.create(newReservation([[1n, 3]], { ttlSeconds: 1 })));
      await sleep(Math.max(0, r.expiresAt.getTime() - Date.now()) + 50);
      const head = await store.events.head();
      created(await store.reservations.create(newReservation([[1n, 3]])));
      assert.deepEqual(
        (await eventsAfter(store, head)).map((e) => e.type),
        ['reservation.expired', 'reservation.created'],
      );
      assert.deepEqual(await itemOf(store, 1n), { ...item(1n, 3), reserved: 3 });
    });

    it('a negative adjustment may not take available below 0; a count applies whatever is held (decisions 12.3)', async (t) => {
      const store = await openTestStore(backend, t);
      await store.changes.addItems([item(1n, 5)]);
      const r = created(await store.reservations.create(newReservation([[1n, 3]])));
      const refused = await store.changes.applyChange(adjustment(1n, -3));
      assert.equal(refused.kind, 'insufficient_stock');
      assert.deepEqual(refused.kind === 'insufficient_stock' && refused.entry.item, { ...item(1n, 5), reserved: 3 });
      assert.equal((await store.changes.applyChange(adjustment(1n, -2))).kind, 'updated');
      assert.equal((await store.changes.applyChange(adjustment(1n, 4))).kind, 'updated', 'a positive delta always applies');
      const batch = await store.changes.applyBatch({ ...testOrigin(), changes: [{ petId: 1n, delta: -5, reason: null }] });
      assert.equal(batch.kind === 'refused' && batch.outcome.kind, 'insufficient_stock');
      // A count below what is held: the count is what is on the shelf.
      const counted = await store.changes.applyChange(change(1n, 1));
      assert.equal(counted.kind, 'updated');
      assert.deepEqual(await itemOf(store, 1n), { ...item(1n, 1), reserved: 3 });
      // The sale sells what is there: the count goes to 0, never below.
      assert.equal((await store.reservations.end(r.id, 'commit', testOrigin())).kind, 'ended');
      assert.deepEqual(await itemOf(store, 1n), item(1n, 0));
    });

    it('an Idempotency-Key replays the first answer and holds nothing twice', async (t) => {
      const store = await openTestStore(backend, t);
      await store.changes.addItems([item(1n, 5)]);
      const idempotency = { key: 'k-1', fingerprint: 'f-1', expiresAt: new Date(Date.now() + 60_000), recordsPerKey: 100 };
      const first = newReservation([[1n, 2]], { origin: { idempotency } });
      const r = created(await store.reservations.create(first));
      const again = await store.reservations.create({ ...newReservation([[1n, 2]], { origin: { idempotency } }) });
      assert.equal(again.kind === 'created' && again.replayed, true);
      assert.deepEqual(again.kind === 'created' && again.reservation, r);
      assert.deepEqual(await itemOf(store, 1n), { ...item(1n, 5), reserved: 2 });
      const other = await store.reservations.create(newReservation([[1n, 1]], { origin: { idempotency: { ...idempotency, fingerprint: 'f-2' } } }));
      assert.deepEqual(other, { kind: 'idempotency_key_reused' });
    });

    it('lists newest first, by live status and pet, in pages', async (t) => {
      const store = await openTestStore(backend, t);
      await store.changes.addItems([item(1n, 50), item(2n, 50)]);
      const a = created(await store.reservations.create(newReservation([[1n, 1]])));
      const b = created(await store.reservations.create(newReservation([[2n, 1]])));
      const c = created(await store.reservations.create(newReservation([[1n, 1], [2n, 1]])));
      await store.reservations.end(b.id, 'release', testOrigin());
      const ids = async (q: Parameters<typeof store.reservations.list>[0]) => (await store.reservations.list(q)).map((l) => l.reservation.id);
      assert.deepEqual(await ids({ limit: 10 }), [c.id, b.id, a.id]);
      assert.deepEqual(await ids({ limit: 10, status: 'active' }), [c.id, a.id]);
      assert.deepEqual(await ids({ limit: 10, status: 'released' }), [b.id]);
      assert.deepEqual(await ids({ limit: 10, petId: 2n }), [c.id, b.id]);
      const first = await store.reservations.list({ limit: 2 });
      assert.deepEqual(await ids({ limit: 2, before: first.at(-1)!.place }), [a.id]);
      assert.deepEqual(await store.reservations.held(), { active: 2, units: 3 });
    });

    it('writes waiting together: each judged in arrival order on what the ones before it left, the events in that order', async (t) => {
      const store = await openTestStore(backend, t);
      await store.changes.addItems([item(1n, 5), item(2n, 4), item(3n, 1)]);
      const a = created(await store.reservations.create(newReservation([[1n, 2], [2n, 1]])));
      const b = created(await store.reservations.create(newReservation([[2n, 3]])));
      const head = await store.events.head();
      // Submitted in one turn, so they wait for the store together.
      const [sold, again, released, held, short, lapsed, missing, unknown] = await Promise.all([
        store.reservations.end(a.id, 'commit', testOrigin({ requestId: 'req-sell' })),
        store.reservations.end(a.id, 'release', testOrigin()),
        store.reservations.end(b.id, 'release', testOrigin()),
        store.reservations.create(newReservation([[2n, 3], [3n, 1]], { reference: 'order-2' })),
        store.reservations.create(newReservation([[1n, 4]])),
        store.reservations.end('res_000000000000000000000000', 'commit', testOrigin()),
        store.reservations.create(newReservation([[1n, 1], [9n, 1]])),
        store.reservations.create(newReservation([[3n, 1]])),
      ]);
      assert.equal(sold.kind === 'ended' && sold.reservation.status, 'committed');
      assert.equal(again.kind === 'not_active' && again.reservation.status, 'committed', 'the commit before it in the group ended it');
      assert.equal(released.kind, 'ended');
      const order2 = created(held);
      assert.deepEqual(order2.items, [{ petId: 2n, quantity: 3 }, { petId: 3n, quantity: 1 }], "b's release before it left 3 of pet 2");
      assert.deepEqual(short, { kind: 'insufficient_stock', index: 0, petId: 1n, quantity: 3, reserved: 0, available: 3, replayed: false });
      assert.deepEqual(lapsed, { kind: 'not_found' });
      assert.deepEqual(missing, { kind: 'not_found', index: 1, petId: 9n, replayed: false });
      assert.deepEqual(unknown, { kind: 'insufficient_stock', index: 0, petId: 3n, quantity: 1, reserved: 1, available: 0, replayed: false });
      assert.deepEqual(await itemOf(store, 1n), item(1n, 3));
      assert.deepEqual(await itemOf(store, 2n), { ...item(2n, 3), reserved: 3 });
      assert.deepEqual(await itemOf(store, 3n), { ...item(3n, 1), reserved: 1 });
      const events = await eventsAfter(store, head);
      assert.deepEqual(events.map(summary), [
        'inventory.updated pet 1 5->3 sold',
        'inventory.updated pet 2 4->3 sold',
        'reservation.committed committed 1x2,2x1 api',
        'reservation.released released 2x3 api',
        'reservation.created active 2x3,3x1 api',
      ]);
      assert.deepEqual(
        events.map((e) => e.seq),
        events.map((_, i) => head + 1 + i),
        'seqs follow the head, one after another',
      );
      const history = await store.history.listHistory(1n, { limit: 10 });
      assert.deepEqual(
        history!.map((h) => [h.previousQuantity, h.quantity, h.reason, h.requestId]),
        [[5, 3, 'sold', 'req-sell']],
      );
      assert.deepEqual(await store.reservations.get(order2.id), order2);
      assert.equal((await store.reservations.get(a.id))?.status, 'committed');
      assert.deepEqual(await store.reservations.held(), { active: 1, units: 4 });
    });

    it('writes waiting together: a creation a lapsed hold stands in the way of is judged again once the hold is marked', async (t) => {
      const store = await openTestStore(backend, t);
      await store.changes.addItems([item(1n, 3), item(2n, 1)]);
      const r = created(await store.reservations.create(newReservation([[1n, 3]], { ttlSeconds: 1 })));
      await sleep(Math.max(0, r.expiresAt.getTime() - Date.now()) + 50);
      const head = await store.events.head();
      const [first, second] = await Promise.all([store.reservations.create(newReservation([[2n, 1]])), store.reservations.create(newReservation([[1n, 3]]))]);
      created(first);
      created(second);
      assert.deepEqual(
        (await eventsAfter(store, head)).map((e) => e.type).sort(),
        ['reservation.created', 'reservation.created', 'reservation.expired'],
      );
      assert.deepEqual(await itemOf(store, 1n), { ...item(1n, 3), reserved: 3 });
    });

    it('writes waiting together: one that the store refuses fails by itself, the others are held', async (t) => {
      const store = await openTestStore(backend, t);
      await store.changes.addItems([item(1n, 5)]);
      // A second item of quantity 0, which no request can send: the table's CHECK refuses its row.
      const broken = newReservation([[1n, 1], [1n, 0]]);
      const [kept, refused, after] = await Promise.allSettled([
        store.reservations.create(newReservation([[1n, 1]])),
        store.reservations.create(broken),
        store.reservations.create(newReservation([[1n, 2]])),
      ]);
      assert.equal(kept.status === 'fulfilled' && kept.value.kind, 'created');
      assert.equal(refused.status, 'rejected');
      assert.equal(after.status === 'fulfilled' && after.value.kind, 'created');
      assert.deepEqual(await itemOf(store, 1n), { ...item(1n, 5), reserved: 3 });
      assert.equal(await store.reservations.get(broken.id), undefined);
    });

    it('200 concurrent reservations of 1 for a pet with 50 available: exactly 50 held, 150 refused', async (t) => {
      const store = await openTestStore(backend, t);
      await store.changes.addItems([item(1n, 60)]);
      created(await store.reservations.create(newReservation([[1n, 10]])));
      const results = await Promise.all(Array.from({ length: 200 }, () => store.reservations.create(newReservation([[1n, 1]]))));
      assert.equal(results.filter((r) => r.kind === 'created').length, 50);
      assert.equal(results.filter((r) => r.kind === 'insufficient_stock').length, 150);
      assert.deepEqual(await itemOf(store, 1n), { ...item(1n, 60), reserved: 60 });
      assert.deepEqual(await store.reservations.held(), { active: 51, units: 60 });
    });
  });
}
