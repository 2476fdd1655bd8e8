import assert from 'node:assert/strict';
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  DISABLED_BY_OPERATOR,
  DISABLED_GONE,
  type DeliveryAttempt,
  type DeliveryProgress,
  type NewWebhookEndpoint,
} from '../../src/domain/webhook.js';
import type { Store, WebhookEndpoints } from '../../src/store/store.js';
import { BACKENDS, backendSkip, createTestDatabase, openTestStore } from '../support/backends.js';
import type { LeaseAnswer, LeaseOrder } from '../support/lease-holder.js';
import { change } from '../support/store.js';

/**
 * The webhook ports. WebhookEndpoints: endpoints that start at the log's head, keep their place
 * when disabled, and their delivery log (pruned by Maintenance.purgeDeliveries). WebhookDeliveries:
 * each endpoint delivered to by one lease holder at a time, whose progress (attempts and position
 * together) is recorded only while it still holds the lease.
 */

/** Long enough never to run out during a test: "the lease is live" must not depend on the machine's speed. */
const LONG_LEASE_MS = 60_000;
/** A lease a test waits out. */
const SHORT_LEASE_MS = 1000;

/** Endpoint n, created n minutes into 2024, so that n orders them. */
function endpoint(n: number, overrides: Partial<NewWebhookEndpoint> = {}): NewWebhookEndpoint {
  return {
    id: `whk_${n}`,
    url: `https://receiver-${n}.example.com/hook`,
    description: n % 2 === 0 ? null : `receiver ${n}`,
    secret: `whsec_secret${n}`,
    createdAt: new Date(Date.UTC(2024, 0, 1, 0, n, 0, 123)),
    ...overrides,
  };
}

/** An attempt at event `seq`, made `n` seconds into 2024. */
function attempt(endpointId: string, seq: number, n = seq, overrides: Partial<DeliveryAttempt> = {}): DeliveryAttempt {
  return {
    endpointId,
    eventId: `evt_${seq}`,
    seq,
    attemptedAt: new Date(Date.UTC(2024, 0, 1, 0, 0, n, 456)),
    status: 200,
    error: null,
    durationMs: 12,
    responseBody: 'ok',
    ...overrides,
  };
}

function progress(deliveredSeq: number, attempts: DeliveryAttempt[], overrides: Partial<DeliveryProgress> = {}): DeliveryProgress {
  return { attempts, deliveredSeq, deliveredAbove: [], retrying: [], failures: 0, nextAttemptAt: null, lastFailureAt: null, lastFailure: null, ...overrides };
}

/** Appends `n` events: creates pet `petId` and changes its quantity n - 1 times. */
async function appendEvents(store: Store, petId: bigint, n: number): Promise<void> {
  await store.changes.addItems([{ petId, quantity: 0, status: 'available' }]);
  for (let q = 1; q < n; q++) await store.changes.applyChange(change(petId, q));
}

const ids = (endpoints: readonly { id: string }[]) => endpoints.map((e) => e.id);

const LEASE_HOLDER = new URL('../support/lease-holder.ts', import.meta.url);

/** The next message of a child process, or a failure if it exits first. */
async function nextMessage<M>(child: ChildProcess): Promise<M> {
  // Both waits end once either settles: a holder answers many orders, and a wait left behind keeps its listeners on the child.
  const settled = new AbortController();
  const exited = once(child, 'exit', { signal: settled.signal }).then(([code]) => Promise.reject(new Error(`lease holder exited with ${String(code)}`)));
  try {
    return (await Promise.race([once(child, 'message', { signal: settled.signal }), exited]))[0] as M;
  } finally {
    settled.abort();
    exited.catch(() => {});
  }
}

/**
 * Every member of WebhookEndpoints, and whether it must move the endpoints version
 * (WebhookDeliveries.endpointsVersion): the type makes a new member a compile error until it is
 * listed here, and the test below fails while a store has a member this list lacks. `bumps` is the
 * call that changes an endpoint (on a store holding whk_1, enabled, and whk_2); the others are called
 * too, and must leave the version where it was.
 */
const ENDPOINT_MEMBERS: Record<keyof WebhookEndpoints, { bumps: boolean; call: (s: Store) => Promise<unknown> }> = {
  addEndpoint: { bumps: true, call: (s) => s.webhookEndpoints.addEndpoint(endpoint(3)) },
  removeEndpoint: { bumps: true, call: (s) => s.webhookEndpoints.removeEndpoint('whk_2') },
  disableEndpoint: { bumps: true, call: (s) => s.webhookEndpoints.disableEndpoint('whk_1', DISABLED_BY_OPERATOR) },
  enableEndpoint: { bumps: true, call: (s) => s.webhookEndpoints.enableEndpoint('whk_1') },
  replayFrom: { bumps: true, call: (s) => s.webhookEndpoints.replayFrom('whk_1', 0) },
  updateEndpoint: { bumps: true, call: (s) => s.webhookEndpoints.updateEndpoint('whk_1', { maxInFlight: 4 }) },
  rotateSecret: { bumps: true, call: (s) => s.webhookEndpoints.rotateSecret('whk_1', 'whsec_rotated', new Date(Date.now() + 60_000)) },
  listEndpoints: { bumps: false, call: (s) => s.webhookEndpoints.listEndpoints() },
  getEndpoint: { bumps: false, call: (s) => s.webhookEndpoints.getEndpoint('whk_1') },
  recordAttempts: { bumps: false, call: (s) => s.webhookEndpoints.recordAttempts([attempt('whk_1', 0)]) },
  listDeliveries: { bumps: false, call: (s) => s.webhookEndpoints.listDeliveries('whk_1', 10) },
};

for (const backend of BACKENDS) {
  describe(`WebhookEndpoints on ${backend}`, { skip: await backendSkip(backend) }, () => {
    it('adds an endpoint at the head of the log, enabled and with nothing failed; later events leave it there', async (t) => {
      const store = await openTestStore(backend, t);
      await appendEvents(store, 1n, 3);
      const head = await store.events.head();
      assert.equal(head, 3);

      const added = await store.webhookEndpoints.addEndpoint(endpoint(1));
      assert.deepEqual(added, {
        ...endpoint(1),
        previousSecret: null,
        previousSecretUntil: null,
        enabled: true,
        disabledReason: null,
        deliveredSeq: head,
        failures: 0,
        nextAttemptAt: null,
        lastFailureAt: null,
        lastFailure: null,
        maxInFlight: 16,
        deliveredAbove: [],
        retrying: [],
      });
      await appendEvents(store, 2n, 2);
      assert.deepEqual(await store.webhookEndpoints.getEndpoint('whk_1'), added);
    });

    it('on an empty log an endpoint starts at 0', async (t) => {
      const store = await openTestStore(backend, t);
      assert.equal((await store.webhookEndpoints.addEndpoint(endpoint(1))).deliveredSeq, 0);
    });

    it('lists endpoints oldest first; get answers one or undefined', async (t) => {
      const store = await openTestStore(backend, t);
      assert.deepEqual(await store.webhookEndpoints.listEndpoints(), []);
      for (const n of [3, 1, 2]) await store.webhookEndpoints.addEndpoint(endpoint(n));
      const list = await store.webhookEndpoints.listEndpoints();
      assert.deepEqual(ids(list), ['whk_1', 'whk_2', 'whk_3']);
      assert.deepEqual(list[1], await store.webhookEndpoints.getEndpoint('whk_2'));
      assert.equal(await store.webhookEndpoints.getEndpoint('whk_9'), undefined);
    });

    it('removes an endpoint with its delivery log, and no other', async (t) => {
      const store = await openTestStore(backend, t);
      await store.webhookEndpoints.addEndpoint(endpoint(1));
      await store.webhookEndpoints.addEndpoint(endpoint(2));
      await store.webhookEndpoints.recordAttempts([attempt('whk_1', 1), attempt('whk_2', 1), attempt('whk_1', 2)]);

      assert.equal(await store.webhookEndpoints.removeEndpoint('whk_1'), true);
      assert.equal(await store.webhookEndpoints.getEndpoint('whk_1'), undefined);
      assert.deepEqual(await store.webhookEndpoints.listDeliveries('whk_1', 10), []);
      assert.deepEqual(await store.webhookEndpoints.listDeliveries('whk_2', 10), [attempt('whk_2', 1)]);
      assert.equal(await store.webhookEndpoints.removeEndpoint('whk_1'), false);

      // The id is free again, and its new endpoint has no log.
      await store.webhookEndpoints.addEndpoint(endpoint(1));
      assert.deepEqual(await store.webhookEndpoints.listDeliveries('whk_1', 10), []);
    });

    it('disable keeps the place and gives up the lease; enable clears the failures and the wait', async (t) => {
      const store = await openTestStore(backend, t);
      await store.webhookEndpoints.addEndpoint(endpoint(1));
      await appendEvents(store, 1n, 4);
      assert.deepEqual(ids(await store.webhookDeliveries.leaseEndpoints('a', LONG_LEASE_MS)), ['whk_1']);
      const failedAt = new Date(Date.UTC(2024, 5, 1));
      const retryAt = new Date(Date.UTC(2024, 5, 2));
      const recorded = await store.webhookDeliveries.recordProgress(
        'whk_1',
        'a',
        progress(2, [attempt('whk_1', 3, 3, { status: 500 })], { failures: 3, nextAttemptAt: retryAt, lastFailureAt: failedAt, lastFailure: 'HTTP 500' }),
      );
      assert.equal(recorded, true);

      assert.equal(await store.webhookEndpoints.disableEndpoint('whk_1', DISABLED_BY_OPERATOR), true);
      const disabled = (await store.webhookEndpoints.getEndpoint('whk_1'))!;
      assert.equal(disabled.enabled, false);
      assert.equal(disabled.disabledReason, DISABLED_BY_OPERATOR);
      assert.equal(disabled.deliveredSeq, 2);
      // Its holder no longer holds it, and its next flush is refused.
      assert.deepEqual(await store.webhookDeliveries.leaseEndpoints('a', LONG_LEASE_MS), []);
      assert.equal(await store.webhookDeliveries.recordProgress('whk_1', 'a', progress(3, [attempt('whk_1', 3)])), false);
      assert.deepEqual(await store.webhookDeliveries.leaseEndpoints('b', LONG_LEASE_MS), [], 'a disabled endpoint is leased to no one');

      assert.equal(await store.webhookEndpoints.enableEndpoint('whk_1'), true);
      assert.deepEqual(await store.webhookEndpoints.getEndpoint('whk_1'), {
        ...disabled,
        enabled: true,
        disabledReason: null,
        failures: 0,
        nextAttemptAt: null,
      });
      // The lease was given up: another holder takes it at once.
      assert.deepEqual(ids(await store.webhookDeliveries.leaseEndpoints('b', LONG_LEASE_MS)), ['whk_1']);

      assert.equal(await store.webhookEndpoints.disableEndpoint('whk_9', DISABLED_BY_OPERATOR), false);
      assert.equal(await store.webhookEndpoints.enableEndpoint('whk_9'), false);
    });

    it('replayFrom moves the place back and clears the failures; false for an unknown id', async (t) => {
      const store = await openTestStore(backend, t);
      await appendEvents(store, 1n, 2);
      const added = await store.webhookEndpoints.addEndpoint(endpoint(1));
      await appendEvents(store, 2n, 3);
      await store.webhookDeliveries.leaseEndpoints('a', LONG_LEASE_MS);
      const head = await store.events.head();
      assert.equal(await store.webhookDeliveries.recordProgress('whk_1', 'a', progress(head, [], { failures: 2, nextAttemptAt: new Date(Date.now() + 60_000) })), true);
      assert.equal(await store.webhookEndpoints.replayFrom('whk_1', added.deliveredSeq), true);
      const stands = (await store.webhookEndpoints.getEndpoint('whk_1'))!;
      assert.deepEqual([stands.deliveredSeq, stands.failures, stands.nextAttemptAt, stands.enabled], [added.deliveredSeq, 0, null, true]);
      assert.equal(await store.webhookEndpoints.replayFrom('whk_none', 0), false);
    });

    it('replayFrom forgets what was delivered above the old place and the events waiting for a retry; enable forgets the retries only', async (t) => {
      const store = await openTestStore(backend, t);
      const added = await store.webhookEndpoints.addEndpoint(endpoint(1));
      await appendEvents(store, 1n, 6);
      await store.webhookDeliveries.leaseEndpoints('a', LONG_LEASE_MS);
      const retrying = [{ seq: 3, failures: 2, at: new Date(Date.UTC(2024, 0, 1, 0, 5)) }];
      assert.equal(await store.webhookDeliveries.recordProgress('whk_1', 'a', progress(2, [], { deliveredAbove: [4, 6], retrying, failures: 2 })), true);
      assert.equal(await store.webhookEndpoints.enableEndpoint('whk_1'), true);
      let stands = (await store.webhookEndpoints.getEndpoint('whk_1'))!;
      assert.deepEqual([stands.deliveredSeq, stands.deliveredAbove, stands.retrying, stands.failures], [2, [4, 6], [], 0]);
      assert.equal(await store.webhookEndpoints.replayFrom('whk_1', added.deliveredSeq), true);
      stands = (await store.webhookEndpoints.getEndpoint('whk_1'))!;
      assert.deepEqual([stands.deliveredSeq, stands.deliveredAbove, stands.retrying], [added.deliveredSeq, [], []]);
    });

    it('updateEndpoint sets the requests in flight; undefined for an unknown id; the bounds are kept by the store too', async (t) => {
      const store = await openTestStore(backend, t);
      assert.equal((await store.webhookEndpoints.addEndpoint(endpoint(1, { maxInFlight: 1 }))).maxInFlight, 1);
      assert.equal((await store.webhookEndpoints.updateEndpoint('whk_1', { maxInFlight: 100 }))!.maxInFlight, 100);
      assert.equal((await store.webhookEndpoints.getEndpoint('whk_1'))!.maxInFlight, 100);
      assert.equal(await store.webhookEndpoints.updateEndpoint('whk_none', { maxInFlight: 2 }), undefined);
      await assert.rejects(store.webhookEndpoints.updateEndpoint('whk_1', { maxInFlight: 101 }));
      await assert.rejects(store.webhookEndpoints.updateEndpoint('whk_1', { maxInFlight: 0 }));
    });

    it('rotating the secret keeps the one it replaces until the given time', async (t) => {
      const store = await openTestStore(backend, t);
      await store.webhookEndpoints.addEndpoint(endpoint(1));
      const until = new Date(Date.UTC(2024, 0, 2, 3, 4, 5, 678));
      const rotated = await store.webhookEndpoints.rotateSecret('whk_1', 'whsec_second', until);
      assert.deepEqual(
        { secret: rotated?.secret, previousSecret: rotated?.previousSecret, previousSecretUntil: rotated?.previousSecretUntil },
        { secret: 'whsec_second', previousSecret: 'whsec_secret1', previousSecretUntil: until },
      );
      assert.deepEqual(await store.webhookEndpoints.getEndpoint('whk_1'), rotated);

      const later = new Date(Date.UTC(2024, 0, 3));
      const again = (await store.webhookEndpoints.rotateSecret('whk_1', 'whsec_third', later))!;
      assert.deepEqual([again.secret, again.previousSecret, again.previousSecretUntil], ['whsec_third', 'whsec_second', later]);
      assert.equal(await store.webhookEndpoints.rotateSecret('whk_9', 'whsec_x', later), undefined);
    });

    it('lists the newest attempts first, at most the limit; attempts outside the order move nothing', async (t) => {
      const store = await openTestStore(backend, t);
      await store.webhookEndpoints.addEndpoint(endpoint(1));
      const made = [1, 2, 3, 4, 5].map((seq) => attempt('whk_1', seq, seq, seq % 2 === 0 ? { status: 503, responseBody: null } : {}));
      await store.webhookEndpoints.recordAttempts(made.slice(0, 2));
      await store.webhookEndpoints.recordAttempts(made.slice(2));
      const test = attempt('whk_1', 0, 30, { eventId: 'msg_test' });
      await store.webhookEndpoints.recordAttempts([test]);
      assert.deepEqual(await store.webhookEndpoints.listDeliveries('whk_1', 3), [test, made[4], made[3]]);
      assert.equal((await store.webhookEndpoints.listDeliveries('whk_1', 100)).length, 6);
      assert.equal((await store.webhookEndpoints.getEndpoint('whk_1'))!.deliveredSeq, 0);
      await store.webhookEndpoints.recordAttempts([]);
      // An attempt to an endpoint removed meanwhile goes with it.
      await store.webhookEndpoints.recordAttempts([attempt('whk_9', 1)]);
      assert.deepEqual(await store.webhookEndpoints.listDeliveries('whk_9', 10), []);
    });

    it('maintenance purges the attempts made before a time, of every endpoint', async (t) => {
      const store = await openTestStore(backend, t);
      await store.webhookEndpoints.addEndpoint(endpoint(1));
      await store.webhookEndpoints.addEndpoint(endpoint(2));
      await store.webhookEndpoints.recordAttempts([attempt('whk_1', 1, 1), attempt('whk_2', 1, 2), attempt('whk_1', 2, 10), attempt('whk_2', 2, 11)]);
      const cutoff = new Date(Date.UTC(2024, 0, 1, 0, 0, 5));
      assert.equal(await store.maintenance.purgeDeliveries(cutoff), 2);
      assert.deepEqual(await store.webhookEndpoints.listDeliveries('whk_1', 10), [attempt('whk_1', 2, 10)]);
      assert.deepEqual(await store.webhookEndpoints.listDeliveries('whk_2', 10), [attempt('whk_2', 2, 11)]);
      assert.equal(await store.maintenance.purgeDeliveries(cutoff), 0);
    });
  });

  describe(`the endpoints version on ${backend}`, { skip: await backendSkip(backend) }, () => {
    it('lists every member of WebhookEndpoints', async (t) => {
      const store = await openTestStore(backend, t);
      assert.deepEqual(Object.keys(store.webhookEndpoints).sort(), Object.keys(ENDPOINT_MEMBERS).sort());
    });

    for (const [member, { bumps, call }] of Object.entries(ENDPOINT_MEMBERS)) {
      it(`${member} ${bumps ? 'moves the version, seen from another store on the database, and tells this one\'s listeners' : 'leaves the version where it was'}`, async (t) => {
        const db = await createTestDatabase(backend, t);
        const store = await db.open();
        const other = await db.open();
        t.after(() => other.close());
        await store.webhookEndpoints.addEndpoint(endpoint(1));
        await store.webhookEndpoints.addEndpoint(endpoint(2));
        const before = await other.webhookDeliveries.endpointsVersion();
        let told = 0;
        const stop = store.webhookDeliveries.onEndpointsChanged(() => told++);
        t.after(stop);
        await call(store);
        const after = await other.webhookDeliveries.endpointsVersion();
        if (bumps) {
          assert.ok(after > before, `${member}: ${before} -> ${after}`);
          await new Promise((resolve) => setImmediate(resolve));
          assert.ok(told > 0, 'this store\'s listeners are told');
        } else {
          assert.equal(after, before);
        }
      });
    }

    it('a change that finds no endpoint moves nothing', async (t) => {
      const store = await openTestStore(backend, t);
      const before = await store.webhookDeliveries.endpointsVersion();
      assert.equal(await store.webhookEndpoints.disableEndpoint('whk_none', DISABLED_BY_OPERATOR), false);
      assert.equal(await store.webhookEndpoints.enableEndpoint('whk_none'), false);
      assert.equal(await store.webhookEndpoints.replayFrom('whk_none', 0), false);
      assert.equal(await store.webhookEndpoints.removeEndpoint('whk_none'), false);
      assert.equal(await store.webhookEndpoints.rotateSecret('whk_none', 'whsec_x', new Date()), undefined);
      assert.equal(await store.webhookDeliveries.endpointsVersion(), before);
    });

    it("a worker's progress moves it only when it disables its endpoint", async (t) => {
      const store = await openTestStore(backend, t);
      await store.webhookEndpoints.addEndpoint(endpoint(1));
      await store.webhookDeliveries.leaseEndpoints('a', LONG_LEASE_MS);
      const before = await store.webhookDeliveries.endpointsVersion();
      assert.equal(await store.webhookDeliveries.recordProgress('whk_1', 'a', progress(0, [attempt('whk_1', 1)])), true);
      assert.equal(await store.webhookDeliveries.endpointsVersion(), before, 'progress alone');
      assert.equal(await store.webhookDeliveries.recordProgress('whk_1', 'b', progress(0, [], { disable: DISABLED_GONE })), false);
      assert.equal(await store.webhookDeliveries.endpointsVersion(), before, 'a disable the lease refuses');
      assert.equal(await store.webhookDeliveries.recordProgress('whk_1', 'a', progress(0, [], { disable: DISABLED_GONE })), true);
      assert.ok((await store.webhookDeliveries.endpointsVersion()) > before, 'the worker disabled it');
    });
  });

  describe(`WebhookDeliveries on ${backend}`, { skip: await backendSkip(backend) }, () => {
    it('one holder at a time: a live lease is not taken, its holder renews it, a disabled or removed endpoint leaves its set', async (t) => {
      const store = await openTestStore(backend, t);
      for (const n of [1, 2, 3]) await store.webhookEndpoints.addEndpoint(endpoint(n));
      assert.deepEqual(ids(await store.webhookDeliveries.leaseEndpoints('a', LONG_LEASE_MS)), ['whk_1', 'whk_2', 'whk_3']);
      assert.deepEqual(await store.webhookDeliveries.leaseEndpoints('b', LONG_LEASE_MS), []);
      const renewed = await store.webhookDeliveries.leaseEndpoints('a', LONG_LEASE_MS);
      assert.deepEqual(
        renewed.map(({ leaseClaimedAt: _claimed, ...endpoint }) => endpoint),
        await store.webhookEndpoints.listEndpoints(),
        'the endpoints as they stand, oldest first',
      );
      assert.deepEqual(await store.webhookDeliveries.leaseEndpoints('b', LONG_LEASE_MS), []);

      // A new endpoint goes to whoever asks first.
      await store.webhookEndpoints.addEndpoint(endpoint(4));
      assert.deepEqual(ids(await store.webhookDeliveries.leaseEndpoints('b', LONG_LEASE_MS)), ['whk_4']);

      await store.webhookEndpoints.disableEndpoint('whk_2', DISABLED_BY_OPERATOR);
      await store.webhookEndpoints.removeEndpoint('whk_3');
      assert.deepEqual(ids(await store.webhookDeliveries.leaseEndpoints('a', LONG_LEASE_MS)), ['whk_1']);
      assert.deepEqual(ids(await store.webhookDeliveries.leaseEndpoints('b', LONG_LEASE_MS)), ['whk_4']);
    });

    it('an expired lease goes to the next holder, and the old holder can no longer record its progress', async (t) => {
      const store = await openTestStore(backend, t);
      await store.webhookEndpoints.addEndpoint(endpoint(1));
      await store.webhookEndpoints.addEndpoint(endpoint(2));
      assert.deepEqual(ids(await store.webhookDeliveries.leaseEndpoints('a', SHORT_LEASE_MS)), ['whk_1', 'whk_2']);
      await sleep(SHORT_LEASE_MS + 200);

      assert.equal(await store.webhookDeliveries.recordProgress('whk_1', 'a', progress(1, [attempt('whk_1', 1)])), false);
      assert.deepEqual(ids(await store.webhookDeliveries.leaseEndpoints('b', LONG_LEASE_MS)), ['whk_1', 'whk_2']);
      assert.deepEqual(await store.webhookDeliveries.leaseEndpoints('a', LONG_LEASE_MS), []);
      assert.equal(await store.webhookDeliveries.recordProgress('whk_1', 'a', progress(1, [attempt('whk_1', 1)])), false);
      // What the old holder sent before it stopped is logged, twice here as it was sent twice; its progress is not.
      assert.deepEqual(await store.webhookEndpoints.listDeliveries('whk_1', 10), [attempt('whk_1', 1), attempt('whk_1', 1)]);
      assert.equal((await store.webhookEndpoints.getEndpoint('whk_1'))!.deliveredSeq, 0);
      assert.equal(await store.webhookDeliveries.recordProgress('whk_1', 'b', progress(1, [attempt('whk_1', 1)])), true);
    });

    it('releasing its leases lets another holder claim them at once', async (t) => {
      const store = await openTestStore(backend, t);
      await store.webhookEndpoints.addEndpoint(endpoint(1));
      await store.webhookEndpoints.addEndpoint(endpoint(2));
      await store.webhookDeliveries.leaseEndpoints('a', LONG_LEASE_MS);
      await store.webhookDeliveries.releaseLeases('b');
      assert.deepEqual(await store.webhookDeliveries.leaseEndpoints('b', LONG_LEASE_MS), [], "releasing another holder's leases releases nothing");
      await store.webhookDeliveries.releaseLeases('a');
      assert.deepEqual(ids(await store.webhookDeliveries.leaseEndpoints('b', LONG_LEASE_MS)), ['whk_1', 'whk_2']);
      assert.equal(await store.webhookDeliveries.recordProgress('whk_1', 'a', progress(1, [])), false);
    });

    it("records the holder's attempts and progress together, and no one else's progress", async (t) => {
      const store = await openTestStore(backend, t);
      await store.webhookEndpoints.addEndpoint(endpoint(1));
      await appendEvents(store, 1n, 3);
      await store.webhookDeliveries.leaseEndpoints('a', LONG_LEASE_MS);
      const failedAt = new Date(Date.UTC(2024, 0, 1, 0, 0, 3));
      const retryAt = new Date(Date.UTC(2024, 0, 1, 0, 0, 8));
      const attempts = [
        attempt('whk_1', 1),
        attempt('whk_1', 2),
        attempt('whk_1', 3, 3, { status: null, error: 'ECONNREFUSED', responseBody: null, durationMs: 3.6 }),
      ];
      const flushed = progress(2, attempts, { failures: 1, nextAttemptAt: retryAt, lastFailureAt: failedAt, lastFailure: 'ECONNREFUSED' });

      assert.equal(await store.webhookDeliveries.recordProgress('whk_1', 'b', { ...flushed, attempts: [] }), false, 'not the holder');
      assert.equal((await store.webhookEndpoints.getEndpoint('whk_1'))!.deliveredSeq, 0);

      assert.equal(await store.webhookDeliveries.recordProgress('whk_1', 'a', flushed), true);
      const stands = (await store.webhookEndpoints.getEndpoint('whk_1'))!;
      assert.deepEqual(
        [stands.deliveredSeq, stands.failures, stands.nextAttemptAt, stands.lastFailureAt, stands.lastFailure, stands.enabled],
        [2, 1, retryAt, failedAt, 'ECONNREFUSED', true],
      );
      // Newest first; the duration is kept in whole milliseconds.
      assert.deepEqual(await store.webhookEndpoints.listDeliveries('whk_1', 10), [{ ...attempts[2]!, durationMs: 4 }, attempts[1], attempts[0]]);
      // The lease is kept: the holder goes on.
      assert.equal(await store.webhookDeliveries.recordProgress('whk_1', 'a', progress(3, [attempt('whk_1', 3, 9)])), true);
      assert.equal((await store.webhookEndpoints.getEndpoint('whk_1'))!.failures, 0);
    });

    it('records the place above deliveredSeq (delivered seqs, events waiting for a retry) with the attempts, as given', async (t) => {
      const store = await openTestStore(backend, t);
      await store.webhookEndpoints.addEndpoint(endpoint(1));
      await appendEvents(store, 1n, 400);
      await store.webhookDeliveries.leaseEndpoints('a', LONG_LEASE_MS);
      const deliveredAbove = [5, 6, 7, 9, ...Array.from({ length: 300 }, (_, i) => 100 + i)];
      const retrying = [
        { seq: 2, failures: 1, at: new Date(Date.UTC(2024, 0, 1, 0, 1, 2, 345)) },
        { seq: 8, failures: 3, at: new Date(Date.UTC(2024, 0, 1, 0, 9)) },
      ];
      assert.equal(await store.webhookDeliveries.recordProgress('whk_1', 'a', progress(1, [attempt('whk_1', 9)], { deliveredAbove, retrying, failures: 3 })), true);
      const stands = (await store.webhookEndpoints.getEndpoint('whk_1'))!;
      assert.deepEqual([stands.deliveredSeq, stands.deliveredAbove, stands.retrying, stands.failures], [1, deliveredAbove, retrying, 3]);
      const [leased] = await store.webhookDeliveries.leaseEndpoints('a', LONG_LEASE_MS);
      assert.deepEqual([leased!.deliveredAbove, leased!.retrying], [deliveredAbove, retrying], 'a new holder starts from it');
      assert.equal(await store.webhookDeliveries.recordProgress('whk_1', 'a', progress(400, [])), true);
      assert.deepEqual((await store.webhookEndpoints.getEndpoint('whk_1'))!.deliveredAbove, []);
    });

    it('records a flush of many attempts whole and in order, however the backend batches its rows', async (t) => {
      const store = await openTestStore(backend, t);
      await store.webhookEndpoints.addEndpoint(endpoint(1));
      await appendEvents(store, 1n, 3);
      await store.webhookDeliveries.leaseEndpoints('a', LONG_LEASE_MS);
      // Two and a half of the SQLite store's statements of fifty rows, one failed among them.
      const attempts = Array.from({ length: 123 }, (_, i) => attempt('whk_1', i + 1, i, i === 60 ? { status: null, error: 'ECONNRESET', responseBody: null } : {}));
      assert.equal(await store.webhookDeliveries.recordProgress('whk_1', 'a', progress(123, attempts)), true);
      assert.deepEqual(await store.webhookEndpoints.listDeliveries('whk_1', 200), attempts.toReversed());
    });

    it('refuses the progress of a disabled or removed endpoint; logs the attempts sent to the disabled one', async (t) => {
      const store = await openTestStore(backend, t);
      await store.webhookEndpoints.addEndpoint(endpoint(1));
      await store.webhookEndpoints.addEndpoint(endpoint(2));
      await store.webhookDeliveries.leaseEndpoints('a', LONG_LEASE_MS);

      await store.webhookEndpoints.disableEndpoint('whk_1', DISABLED_BY_OPERATOR);
      const sent = [attempt('whk_1', 1), attempt('whk_1', 2, 2, { status: 500, responseBody: 'no' })];
      assert.equal(await store.webhookDeliveries.recordProgress('whk_1', 'a', progress(2, sent, { failures: 1, lastFailure: 'HTTP 500' })), false);
      assert.deepEqual(await store.webhookEndpoints.listDeliveries('whk_1', 10), sent.toReversed(), 'the receiver got them: they are in the log');
      const stands = (await store.webhookEndpoints.getEndpoint('whk_1'))!;
      assert.deepEqual([stands.enabled, stands.deliveredSeq, stands.failures, stands.lastFailure], [false, 0, 0, null], 'the progress is not recorded');

      await store.webhookEndpoints.removeEndpoint('whk_2');
      assert.equal(await store.webhookDeliveries.recordProgress('whk_2', 'a', progress(1, [attempt('whk_2', 1)])), false);
      assert.deepEqual(await store.webhookEndpoints.listDeliveries('whk_2', 10), []);
      assert.equal(await store.webhookEndpoints.getEndpoint('whk_2'), undefined);
    });

    it('progress that disables the endpoint records its attempts, disables it and gives up its lease', async (t) => {
      const store = await openTestStore(backend, t);
      await store.webhookEndpoints.addEndpoint(endpoint(1));
      await store.webhookDeliveries.leaseEndpoints('a', LONG_LEASE_MS);
      const gone = attempt('whk_1', 2, 2, { status: 410, responseBody: 'gone' });
      const at = gone.attemptedAt;
      assert.equal(
        await store.webhookDeliveries.recordProgress('whk_1', 'a', progress(1, [attempt('whk_1', 1), gone], { failures: 1, lastFailureAt: at, lastFailure: 'HTTP 410', disable: DISABLED_GONE })),
        true,
      );
      const disabled = (await store.webhookEndpoints.getEndpoint('whk_1'))!;
      assert.deepEqual(
        [disabled.enabled, disabled.disabledReason, disabled.deliveredSeq, disabled.failures, disabled.lastFailure],
        [false, DISABLED_GONE, 1, 1, 'HTTP 410'],
      );
      assert.deepEqual(await store.webhookEndpoints.listDeliveries('whk_1', 10), [gone, attempt('whk_1', 1)]);
      assert.deepEqual(await store.webhookDeliveries.leaseEndpoints('a', LONG_LEASE_MS), []);
      await store.webhookEndpoints.enableEndpoint('whk_1');
      assert.deepEqual(ids(await store.webhookDeliveries.leaseEndpoints('b', LONG_LEASE_MS)), ['whk_1'], 'the lease was given up');
    });

    it('two holders leasing at once from two stores never both get an endpoint', async (t) => {
      const db = await createTestDatabase(backend, t);
      const [one, two] = [await db.open(), await db.open()];
      for (let n = 1; n <= 8; n++) await one.webhookEndpoints.addEndpoint(endpoint(n));
      for (let round = 0; round < 10; round++) {
        const [a, b] = await Promise.all([one.webhookDeliveries.leaseEndpoints('a', LONG_LEASE_MS), two.webhookDeliveries.leaseEndpoints('b', LONG_LEASE_MS)]);
        const both = ids(a).filter((id) => ids(b).includes(id));
        assert.deepEqual(both, [], `round ${round}: both hold ${both.join(', ')}`);
        assert.equal(a.length + b.length, 8, `round ${round}: every endpoint is held`);
        await Promise.all([one.webhookDeliveries.releaseLeases('a'), two.webhookDeliveries.releaseLeases('b')]);
      }
    });

    it('a renewal keeps the claim time; a new claim after enable, replay or release moves it on, and the old claim records no progress', async (t) => {
      const store = await openTestStore(backend, t);
      await store.webhookEndpoints.addEndpoint(endpoint(1));
      await appendEvents(store, 1n, 4);
      const [first] = await store.webhookDeliveries.leaseEndpoints('a', LONG_LEASE_MS);
      const [renewed] = await store.webhookDeliveries.leaseEndpoints('a', LONG_LEASE_MS);
      assert.equal(renewed!.leaseClaimedAt.getTime(), first!.leaseClaimedAt.getTime(), 'a renewal keeps it');
      assert.equal(await store.webhookDeliveries.recordProgress('whk_1', 'a', progress(1, [attempt('whk_1', 1)]), first!.leaseClaimedAt), true);

      const acts = [() => store.webhookEndpoints.enableEndpoint('whk_1'), () => store.webhookEndpoints.replayFrom('whk_1', 0), () => store.webhookDeliveries.releaseLeases('a')];
      for (const operatorAct of acts) {
        const [before] = await store.webhookDeliveries.leaseEndpoints('a', LONG_LEASE_MS);
        await operatorAct();
        if (operatorAct !== acts[2]) assert.deepEqual(await store.webhookDeliveries.leaseEndpoints('b', LONG_LEASE_MS), [], 'enable and replay end the claim, not the lease: no one else takes it');
        assert.equal(await store.webhookDeliveries.recordProgress('whk_1', 'a', progress(2, [attempt('whk_1', 2)]), before!.leaseClaimedAt), false, 'the claim ended');
        const [again] = await store.webhookDeliveries.leaseEndpoints('a', LONG_LEASE_MS);
        assert.ok(again!.leaseClaimedAt.getTime() > before!.leaseClaimedAt.getTime(), 'the same holder claimed it anew');
        assert.equal(await store.webhookDeliveries.recordProgress('whk_1', 'a', progress(2, []), before!.leaseClaimedAt), false, 'the old claim is fenced off');
        assert.equal(await store.webhookDeliveries.recordProgress('whk_1', 'a', progress(2, []), again!.leaseClaimedAt), true);
      }
      const logged = await store.webhookEndpoints.listDeliveries('whk_1', 10);
      assert.deepEqual(logged.map((a) => a.seq), [2, 2, 2, 1], 'an ended claim records no progress, but its attempts are logged');
      assert.equal((await store.webhookEndpoints.getEndpoint('whk_1'))!.deliveredSeq, 2, 'the progress is the live claims\'');
    });
  });
}

describe('WebhookDeliveries on sqlite, from processes sharing the file', { skip: await backendSkip('sqlite') }, () => {
  it('two processes leasing at once never both get an endpoint', async (t) => {
    const db = await createTestDatabase('sqlite', t);
    const store = await db.open();
    for (let n = 1; n <= 8; n++) await store.webhookEndpoints.addEndpoint(endpoint(n));
    const holders = ['a', 'b'].map((holder) => fork(LEASE_HOLDER, [db.location, holder], { execArgv: ['--import', 'tsx'] }));
    t.after(() => holders.forEach((h) => h.exitCode === null && h.signalCode === null && h.kill('SIGKILL')));
    await Promise.all(holders.map((h) => nextMessage(h)));

    // Every holder is told at once, and answers: the orders run in the processes side by side.
    const tell = async (order: LeaseOrder) => {
      const answers = holders.map((h) => nextMessage<LeaseAnswer>(h));
      for (const h of holders) h.send(order);
      return (await Promise.all(answers)).map((answer) => answer.ids);
    };
    for (let round = 0; round < 20; round++) {
      const [a, b] = await tell({ lease: LONG_LEASE_MS });
      const both = a!.filter((id) => b!.includes(id));
      assert.deepEqual(both, [], `round ${round}: both hold ${both.join(', ')}`);
      assert.equal(a!.length + b!.length, 8, `round ${round}: every endpoint is held`);
      await tell('release');
    }
    for (const h of holders) h.send('exit' satisfies LeaseOrder);
    await Promise.all(holders.map((h) => once(h, 'exit')));
  });
});
