import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { BACKENDS, backendSkip, createTestDatabase, openTestStore } from '../support/backends.js';

/**
 * The Relays port: a relay of the event log stands at the seq it published up to (0 at first), and
 * is run by one lease holder at a time, whose position is recorded only while it holds the lease.
 */

/** Long enough never to run out during a test: "the lease is live" must not depend on the machine's speed. */
const LONG_LEASE_MS = 60_000;
/** A lease a test waits out. */
const SHORT_LEASE_MS = 300;

for (const backend of BACKENDS) {
  describe(`Relays on ${backend}`, { skip: await backendSkip(backend) }, () => {
    it('a relay never recorded stands at 0, and its holder renews its lease', async (t) => {
      const { relays } = await openTestStore(backend, t);
      assert.equal(await relays.lease('nats', 'a', LONG_LEASE_MS), 0);
      assert.equal(await relays.lease('nats', 'a', LONG_LEASE_MS), 0);
    });

    it('one holder at a time: another gets undefined while the lease is live', async (t) => {
      const { relays } = await openTestStore(backend, t);
      assert.equal(await relays.lease('nats', 'a', LONG_LEASE_MS), 0);
      assert.equal(await relays.lease('nats', 'b', LONG_LEASE_MS), undefined);
      // Relays are independent of one another.
      assert.equal(await relays.lease('other', 'b', LONG_LEASE_MS), 0);
      assert.equal(await relays.lease('other', 'a', LONG_LEASE_MS), undefined);
    });

    it('two holders racing for a free relay: exactly one gets it', async (t) => {
      const database = await createTestDatabase(backend, t);
      const [one, two] = [await database.open(), await database.open()];
      for (let round = 0; round < 10; round++) {
        const name = `race-${round}`;
        const got = await Promise.all([one.relays.lease(name, 'a', LONG_LEASE_MS), two.relays.lease(name, 'b', LONG_LEASE_MS)]);
        assert.equal(got.filter((p) => p !== undefined).length, 1, `round ${round}: ${JSON.stringify(got)}`);
      }
    });

    it('the position is kept: recorded by the holder, read back by the next lease, never moved back', async (t) => {
      const database = await createTestDatabase(backend, t);
      const store = await database.open();
      await store.relays.lease('nats', 'a', LONG_LEASE_MS);
      assert.equal(await store.relays.recordPosition('nats', 'a', 40), true);
      assert.equal(await store.relays.recordPosition('nats', 'a', 30), true);
      assert.equal(await store.relays.lease('nats', 'a', LONG_LEASE_MS), 40);
      await store.relays.release('nats', 'a');
      // Another store on the same database (another instance) sees it too.
      const other = await database.open();
      assert.equal(await other.relays.lease('nats', 'b', LONG_LEASE_MS), 40);
    });

    it('fencing: a holder that is not (or no longer) the lease holder records nothing', async (t) => {
      const { relays } = await openTestStore(backend, t);
      assert.equal(await relays.recordPosition('nats', 'a', 5), false, 'no lease at all');
      await relays.lease('nats', 'a', LONG_LEASE_MS);
      assert.equal(await relays.recordPosition('nats', 'b', 5), false, 'not the holder');
      assert.equal(await relays.recordPosition('nats', 'a', 3), true);
      await relays.release('nats', 'a');
      assert.equal(await relays.recordPosition('nats', 'a', 9), false, 'released');
      assert.equal(await relays.lease('nats', 'b', LONG_LEASE_MS), 3);
    });

    it('an expired lease is taken over, and its old holder is fenced out', async (t) => {
      const { relays } = await openTestStore(backend, t);
      await relays.lease('nats', 'a', LONG_LEASE_MS);
      assert.equal(await relays.recordPosition('nats', 'a', 7), true);
      // Renewed short: the renewal sets a new expiry.
      assert.equal(await relays.lease('nats', 'a', SHORT_LEASE_MS), 7);
      // Deadline on waiting, not on timing: try until the lease ran out.
      let taken: number | undefined;
      for (const until = Date.now() + 10_000; taken === undefined && Date.now() < until; ) {
        await sleep(SHORT_LEASE_MS / 2);
        taken = await relays.lease('nats', 'b', LONG_LEASE_MS);
      }
      assert.equal(taken, 7);
      assert.equal(await relays.recordPosition('nats', 'a', 8), false);
      assert.equal(await relays.lease('nats', 'a', LONG_LEASE_MS), undefined);
      assert.equal(await relays.recordPosition('nats', 'b', 8), true);
    });

    it('release gives the relay up at once, and only its holder can release it', async (t) => {
      const { relays } = await openTestStore(backend, t);
      await relays.lease('nats', 'a', LONG_LEASE_MS);
      await relays.release('nats', 'b');
      assert.equal(await relays.lease('nats', 'b', LONG_LEASE_MS), undefined);
      await relays.release('nats', 'a');
      assert.equal(await relays.lease('nats', 'b', LONG_LEASE_MS), 0);
    });
  });
}
