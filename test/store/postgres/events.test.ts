import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { StockEvent } from '../../../src/domain/event.js';
import type { Store } from '../../../src/store/store.js';
import { TEST_DATABASE_DIRECT_URL, backendSkip, createTestDatabase } from '../../support/backends.js';
import { heldSession, waitingOn } from '../../support/pg-session.js';
import { change, stockEvents } from '../../support/store.js';

/**
 * On PostgreSQL transactions commit concurrently, so seq order being commit order is something to
 * prove (decisions 5.10): a write takes its seqs in its last update of store_state, whose row lock
 * it holds to commit. These tests hold a transaction open, by hand, while the store's writes run.
 */

/** How long a test waits for what must happen before it gives up: a deadline on waiting, never a measure of speed. */
const LIVENESS_MS = 10_000;

async function waitUntil(what: string, check: () => Promise<boolean> | boolean): Promise<void> {
  const deadline = Date.now() + LIVENESS_MS;
  while (!(await check())) {
    assert.ok(Date.now() < deadline, `waited ${LIVENESS_MS} ms for ${what}`);
    await sleep(10);
  }
}

/** Follows the log from `after`: every event read since, in the order read. */
function follower(store: Store, after: number): { seen: StockEvent[]; catchUp(): Promise<number> } {
  const seen: StockEvent[] = [];
  let at = after;
  return {
    seen,
    async catchUp() {
      for (;;) {
        const page = await store.events.readEvents(at, 100);
        assert.equal(page.pruned, false);
        seen.push(...stockEvents(page.items));
        if (page.items.length === 0) return page.head;
        at = page.items.at(-1)!.seq;
      }
    },
  };
}

describe('PostgreSQL event log: seq order is commit order', { skip: await backendSkip('postgres') }, () => {
  it('a write held mid-transaction takes its seq only when it can commit: writes of other instances commit meanwhile, and a follower misses nothing', async (t) => {
    const db = await createTestDatabase('postgres', t);
    const [held, others, reader] = [await db.open(), await db.open(), await db.open()];
    await held.changes.addItems([1n, 2n, 3n].map((petId) => ({ petId, quantity: 0, status: 'available' as const })));
    const follow = follower(reader, 0);
    assert.equal(await follow.catchUp(), 3);

    // Pet 1's row locked by hand: the store's change of pet 1 waits inside its statement.
    const raw = await heldSession(db.location, t);
    await raw.query('BEGIN');
    await raw.query('SELECT 1 FROM inventory WHERE pet_id = 1 FOR UPDATE');
    const waiting = held.changes.applyChange(change(1n, 10));
    await waitUntil("the store's write to wait for the lock", async () => (await waitingOn(raw.pid)).length > 0);

    // Another instance's writes commit meanwhile, and the follower sees them.
    await others.changes.applyChange(change(2n, 20));
    await others.changes.applyChange(change(3n, 30));
    assert.equal(await follow.catchUp(), 5);
    assert.deepEqual(follow.seen.slice(3).map((e) => [e.seq, e.petId]), [[4, 2n], [5, 3n]]);

    await raw.query('COMMIT');
    const result = await waiting;
    assert.equal(result.kind, 'updated');
    // The write that waited took the next seq, after every one the follower already passed.
    assert.equal(await follow.catchUp(), 6);
    assert.deepEqual(follow.seen.map((e) => e.seq), [1, 2, 3, 4, 5, 6]);
    assert.deepEqual([follow.seen[5]!.petId, follow.seen[5]!.quantity], [1n, 10]);
  });

  it('a transaction that took a seq and has not committed holds back every later write: none can commit a higher seq before it', async (t) => {
    const db = await createTestDatabase('postgres', t);
    const [store, reader] = [await db.open(), await db.open()];
    await store.changes.addItems([1n, 2n].map((petId) => ({ petId, quantity: 0, status: 'available' as const })));
    const follow = follower(reader, 0);
    assert.equal(await follow.catchUp(), 2);

    // By hand, what every write does last: take a seq from store_state and append its event, then stay open.
    const raw = await heldSession(db.location, t);
    await raw.query('BEGIN');
    const taken = await raw.query<{ head: string }>('UPDATE store_state SET version = version + 1, events_head = events_head + 1 WHERE id = 1 RETURNING events_head AS head');
    assert.equal(Number(taken.rows[0]!.head), 3);
    await raw.query(`INSERT INTO inventory_events (seq, type, occurred_at, pet_id, status, quantity, version, source)
                     VALUES (3, 'inventory.updated', now(), 1, 'available', 0, 1, 'cli')`);

    const later = store.changes.applyChange(change(2n, 7));
    await waitUntil('the later write to wait for store_state', async () => (await waitingOn(raw.pid)).length > 0);
    // Neither is visible: the follower sees no event, and no seq beyond the open one.
    assert.equal(await follow.catchUp(), 2);
    assert.equal(follow.seen.length, 2);

    await raw.query('COMMIT');
    assert.equal((await later).kind, 'updated');
    assert.equal(await follow.catchUp(), 4);
    assert.deepEqual(follow.seen.map((e) => [e.seq, e.petId]), [[1, 1n], [2, 2n], [3, 1n], [4, 2n]]);
  });

  it("onAppended hears another instance's commits through NOTIFY, and closing the store stops listening", async (t) => {
    const db = await createTestDatabase('postgres', t);
    // Through a transaction-mode pooler a LISTEN hears nothing (decisions 5.13): the listener is given the database itself, as DATABASE_DIRECT_URL would.
    const [writer, listener] = [await db.open(), await db.open({ directUrl: TEST_DATABASE_DIRECT_URL })];
    await writer.changes.addItems([{ petId: 1n, quantity: 0, status: 'available' }]);
    let calls = 0;
    listener.events.onAppended(() => calls++);
    // The listening connection opens as the first listener comes: wait until a change reaches it.
    await waitUntil('a notification from the other instance', async () => {
      await writer.changes.applyChange(change(1n, calls + 1));
      await sleep(50);
      return calls > 0;
    });
    await listener.close();
    const closedAt = calls;
    await writer.changes.applyChange(change(1n, 99));
    await sleep(100);
    assert.equal(calls, closedAt, 'no call after close');
  });
});
