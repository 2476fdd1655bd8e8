import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { StockEvent } from '../../src/domain/event.js';
import type { InventoryItem, PetStatus } from '../../src/schemas/inventory.js';
import { DuplicatePetError, type Store } from '../../src/store/store.js';
import { BACKENDS, backendSkip, createTestDatabase, openTestStore } from '../support/backends.js';
import { change, importPlan, importSource, stockEvents } from '../support/store.js';

/**
 * The event log (Events, and the Changes rule of which write appends which event): one event per
 * committed change of an entry, none for a replay, a refusal or a rollback; seqs in commit order
 * that a reader follows without a gap or a double; pruning; the head read with the list.
 */

const TWO_53 = 2n ** 53n;
/** How long a test waits for what must happen before it gives up: a deadline on waiting, never a measure of speed. */
const LIVENESS_MS = 10_000;

function item(petId: bigint, quantity = 1, status: PetStatus = 'available'): InventoryItem {
  return { petId, quantity, status };
}

/** Every event after `after`, read page by page as a follower would. */
async function eventsAfter(store: Store, after: number, limit = 3): Promise<StockEvent[]> {
  const all: StockEvent[] = [];
  for (;;) {
    const page = await store.events.readEvents(after, limit);
    assert.equal(page.pruned, false);
    all.push(...stockEvents(page.items));
    if (page.items.length < limit) return all;
    after = page.items.at(-1)!.seq;
  }
}

/** Runs `write` and returns the events it appended (the head before and after it). */
async function appendedBy(store: Store, write: () => Promise<unknown>): Promise<StockEvent[]> {
  const before = await store.events.head();
  await write();
  const events = await eventsAfter(store, before);
  assert.equal(await store.events.head(), events.at(-1)?.seq ?? before, 'the head is the last event appended');
  return events;
}

/** The event without its seq and time, for comparison; the time is checked apart. */
function fields({ seq: _seq, occurredAt: _at, ...rest }: StockEvent): Omit<StockEvent, 'seq' | 'occurredAt'> {
  return rest;
}

const CLI = { reason: null, source: 'cli', keyId: null, requestId: null } as const;

async function waitUntil(what: string, check: () => Promise<boolean> | boolean): Promise<void> {
  const deadline = Date.now() + LIVENESS_MS;
  while (!(await check())) {
    assert.ok(Date.now() < deadline, `waited ${LIVENESS_MS} ms for ${what}`);
    await sleep(10);
  }
}

for (const backend of BACKENDS) {
  describe(`Event log on ${backend}`, { skip: await backendSkip(backend) }, () => {
    it('starts empty at head 0', async (t) => {
      const store = await openTestStore(backend, t);
      assert.equal(await store.events.head(), 0);
      assert.deepEqual(await store.events.readEvents(0, 10), { items: [], head: 0, pruned: false });
      assert.equal((await store.entries.changesSince(-1)).eventsHead, 0);
    });

    it('addItems appends one inventory.created per entry, from the CLI, in seq order; a rolled-back one appends none', async (t) => {
      const store = await openTestStore(backend, t);
      const before = Date.now();
      const created = await appendedBy(store, () => store.changes.addItems([item(TWO_53 + 1n, 3, 'pending'), item(-5n, 0, 'sold')]));
      assert.deepEqual(created.map((e) => e.seq), [1, 2]);
      assert.deepEqual(
        created.map(fields).sort((a, b) => (a.petId < b.petId ? -1 : 1)),
        [
          { type: 'inventory.created', petId: -5n, status: 'sold', previousQuantity: null, quantity: 0, version: 1, ...CLI },
          { type: 'inventory.created', petId: TWO_53 + 1n, status: 'pending', previousQuantity: null, quantity: 3, version: 1, ...CLI },
        ],
      );
      for (const e of created) assert.ok(e.occurredAt.getTime() >= before - 1000 && e.occurredAt.getTime() <= Date.now() + 1000, 'occurredAt is the time of the write');

      await assert.rejects(store.changes.addItems([item(7n), item(-5n)]), DuplicatePetError);
      assert.deepEqual(await store.events.readEvents(2, 10), { items: [], head: 2, pruned: false }, 'the rolled-back addItems appended nothing');
    });

    it('applyChange appends one inventory.updated with its key, request, reason and the entry version after it; a PATCH to the same quantity too', async (t) => {
      const store = await openTestStore(backend, t);
      await store.changes.addItems([item(1n, 3, 'sold')]);
      const at = new Date('2026-11-26T10:04:05.120Z');
      const changed = await appendedBy(store, () =>
        store.changes.applyChange(change(1n, 5, { at, keyId: 'key_abc', keyName: 'till', requestId: 'req-1', reason: 'received' })),
      );
      assert.deepEqual(changed, [
        {
          seq: 2,
          type: 'inventory.updated',
          occurredAt: at,
          petId: 1n,
          status: 'sold',
          previousQuantity: 3,
          quantity: 5,
          version: 2,
          reason: 'received',
          source: 'api',
          keyId: 'key_abc',
          requestId: 'req-1',
        },
      ]);
      assert.equal((await store.entries.getEntry(1n))!.version, 2, 'the event version is the ETag number');
      // The quantity held already: still a change with its history row (decisions 5.4), so an event.
      const same = await appendedBy(store, () => store.changes.applyChange(change(1n, 5)));
      assert.deepEqual(same.map((e) => [e.seq, e.previousQuantity, e.quantity, e.version, e.reason]), [[3, 5, 5, 3, null]]);
    });

    it('a replay, a failed precondition, no entry, a reused key or a full record cap appends nothing', async (t) => {
      const store = await openTestStore(backend, t);
      await store.changes.addItems([item(1n), item(2n)]);
      const idem = (key: string, fingerprint: string, recordsPerKey = 10) => ({
        idempotency: { key, fingerprint, expiresAt: new Date(Date.now() + 86_400_000), recordsPerKey },
      });
      assert.equal((await appendedBy(store, () => store.changes.applyChange(change(1n, 4, idem('k1', 'f1'))))).length, 1, 'the first time it applies');
      const outcomes = [
        ['replay', change(1n, 4, idem('k1', 'f1')), 'updated'],
        ['reused key', change(1n, 9, idem('k1', 'other')), 'idempotency_key_reused'],
        ['failed precondition', change(1n, 9, { condition: { anyVersion: false, versions: [99] } }), 'precondition_failed'],
        ['no entry', change(3n, 9), 'not_found'],
        ['records full', change(2n, 9, idem('k2', 'f2', 1)), 'idempotency_records_full'],
      ] as const;
      for (const [name, c, kind] of outcomes) {
        const events = await appendedBy(store, async () => assert.equal((await store.changes.applyChange(c)).kind, kind, name));
        assert.deepEqual(events, [], `${name}: no event`);
      }
    });

    it('in one batch, a change the database refuses fails alone: the others append their events, it none', async (t) => {
      const store = await openTestStore(backend, t);
      await store.changes.addItems([item(1n), item(2n), item(3n)]);
      const results = await Promise.allSettled([
        store.changes.applyChange(change(1n, 10)),
        store.changes.applyChange(change(2n, 1.5)),
        store.changes.applyChange(change(3n, 30)),
      ]);
      assert.deepEqual(results.map((r) => r.status), ['fulfilled', 'rejected', 'fulfilled']);
      const events = await eventsAfter(store, 3);
      assert.deepEqual(events.map((e) => [e.petId, e.quantity]).sort(), [[1n, 10], [3n, 30]]);
    });

    it('retireEntry appends inventory.deleted with the status it had, no quantity, and a new version; revival is inventory.created', async (t) => {
      const store = await openTestStore(backend, t);
      await store.changes.addItems([item(1n, 4, 'pending'), item(2n, 0)]);
      await store.changes.applyChange(change(1n, 6));
      const before = (await store.entries.getEntry(1n))!.version;
      assert.deepEqual(await appendedBy(store, () => store.changes.retireEntry(1n, { force: false, at: new Date() })), [], 'refused: in stock');
      assert.deepEqual(await appendedBy(store, () => store.changes.retireEntry(9n, { force: true, at: new Date() })), [], 'no entry');
      const at = new Date('2026-11-26T11:00:00.000Z');
      const deleted = await appendedBy(store, () => store.changes.retireEntry(1n, { force: true, at }));
      assert.deepEqual(deleted.map(fields), [{ type: 'inventory.deleted', petId: 1n, status: 'pending', previousQuantity: 6, quantity: null, version: before + 1, ...CLI }]);
      assert.deepEqual(deleted[0]!.occurredAt, at);
      assert.deepEqual(await appendedBy(store, () => store.changes.retireEntry(1n, { force: true, at })), [], 'retired already');

      const revived = await appendedBy(store, () => store.changes.addItems([item(1n, 2, 'sold')]));
      assert.deepEqual(revived.map(fields), [{ type: 'inventory.created', petId: 1n, status: 'sold', previousQuantity: null, quantity: 2, version: before + 2, ...CLI }]);
      assert.equal((await store.entries.getEntry(1n))!.version, before + 2);
    });

    it('importItems appends created for new and revived entries and updated (correction) for each changed count; an unchanged one or a refused import nothing', async (t) => {
      const store = await openTestStore(backend, t);
      await store.changes.addItems([item(1n, 5), item(2n, 7), item(3n, 1, 'sold')]);
      await store.changes.retireEntry(3n, { force: true, at: new Date() });
      const v1 = (await store.entries.getEntry(1n))!.version;
      const at = new Date('2026-11-20T08:00:00.000Z');
      // Pet 1 changes, pet 2 holds its count, pet 3 is revived, pet 4 is new.
      const rows = [item(4n, 9, 'pending'), item(2n, 7), item(1n, 6), item(3n, 2, 'available')];
      const events = await appendedBy(store, () => store.changes.importItems(importSource(rows), importPlan(true, at)));
      assert.deepEqual(events.map((e) => e.seq), [5, 6, 7]);
      assert.deepEqual(events.map(fields), [
        { type: 'inventory.updated', petId: 1n, status: 'available', previousQuantity: 5, quantity: 6, version: v1 + 1, reason: 'correction', source: 'cli', keyId: null, requestId: null },
        { type: 'inventory.created', petId: 3n, status: 'available', previousQuantity: null, quantity: 2, version: 3, ...CLI },
        { type: 'inventory.created', petId: 4n, status: 'pending', previousQuantity: null, quantity: 9, version: 1, ...CLI },
      ]);
      for (const e of events) assert.deepEqual(e.occurredAt, at);
      for (const e of events) assert.equal((await store.entries.getEntry(e.petId))!.version, e.version, `pet ${e.petId}: the event version is the entry's`);

      // A conflict refuses the whole import: nothing written, nothing appended.
      const refused = await appendedBy(store, () => store.changes.importItems(importSource([item(5n), item(1n, 0, 'sold')]), importPlan(true)));
      assert.deepEqual(refused, []);
      assert.deepEqual(await appendedBy(store, () => store.changes.importItems(importSource([item(6n), item(1n)]), importPlan(false))), [], 'exists');
    });

    it('importItems that creates entries and changes every entry it names that was there appends the events in petId order, the file in that order or not', async (t) => {
      const store = await openTestStore(backend, t);
      await store.changes.addItems([item(2n, 5), item(5n, 5), item(8n, 1, 'sold')]);
      await store.changes.retireEntry(8n, { force: true, at: new Date() });
      const head = (await store.events.readEvents(0, 1)).head;
      const counted = (quantity: number) => [item(1n, 1), item(2n, quantity), item(3n, 3), item(5n, quantity), item(6n, 6), item(8n, 8), item(9n, 9)];
      const sorted = await appendedBy(store, () => store.changes.importItems(importSource(counted(7)), importPlan(true)));
      assert.deepEqual(sorted.map((e) => e.seq), [1, 2, 3, 4, 5, 6, 7].map((n) => head + n));
      assert.deepEqual(sorted.map((e) => [e.petId, e.type]), [
        [1n, 'inventory.created'], [2n, 'inventory.updated'], [3n, 'inventory.created'], [5n, 'inventory.updated'],
        [6n, 'inventory.created'], [8n, 'inventory.created'], [9n, 'inventory.created'],
      ]);
      const shuffled = [...counted(4).slice(1).map((r) => ({ ...r, petId: r.petId + 10n })), item(2n, 4), item(5n, 4)].reverse();
      const unsorted = await appendedBy(store, () => store.changes.importItems(importSource(shuffled), importPlan(true)));
      assert.deepEqual(unsorted.map((e) => e.petId), [2n, 5n, 12n, 13n, 15n, 16n, 18n, 19n]);
      assert.deepEqual(unsorted.map((e) => e.seq), [8, 9, 10, 11, 12, 13, 14, 15].map((n) => head + n));
      assert.deepEqual(unsorted.slice(0, 2).map((e) => [e.previousQuantity, e.quantity]), [[7, 4], [7, 4]]);
    });

    it('readEvents pages by seq, oldest first, with the head; purgeEvents drops the oldest and a reader behind them is told pruned', async (t) => {
      const store = await openTestStore(backend, t);
      const old = new Date(Date.now() - 10 * 86_400_000);
      await store.changes.importItems(importSource([item(1n), item(2n)]), importPlan(false, old));
      for (let q = 2; q <= 4; q++) await store.changes.applyChange(change(1n, q, { at: old }));
      await store.changes.applyChange(change(2n, 9));
      assert.deepEqual((await store.events.readEvents(0, 2)).items.map((e) => e.seq), [1, 2]);
      assert.deepEqual((await store.events.readEvents(4, 10)).items.map((e) => e.seq), [5, 6]);
      assert.deepEqual(await store.events.readEvents(6, 10), { items: [], head: 6, pruned: false });
      assert.deepEqual(await store.events.readEvents(60, 10), { items: [], head: 6, pruned: false });

      assert.equal(await store.events.purgeEvents(new Date(Date.now() - 86_400_000)), 5);
      assert.equal(await store.events.purgeEvents(new Date(Date.now() - 86_400_000)), 0, 'nothing twice');
      for (const after of [0, 4]) assert.deepEqual(await store.events.readEvents(after, 10), { items: [], head: 6, pruned: true }, `after ${after}`);
      assert.deepEqual(stockEvents((await store.events.readEvents(5, 10)).items).map((e) => [e.seq, e.petId, e.quantity]), [[6, 2n, 9]]);
      // A pruned seq is never handed out again.
      await store.changes.applyChange(change(1n, 5));
      assert.deepEqual((await store.events.readEvents(5, 10)).items.map((e) => e.seq), [6, 7]);
    });

    it('countEvents counts the next events by type, oldest first, up to the limit, with the last seq and the head; a pruned event is not counted', async (t) => {
      const store = await openTestStore(backend, t);
      assert.deepEqual(await store.events.countEvents(0, 10), { byType: {}, counted: 0, last: 0, head: 0 });
      const old = new Date(Date.now() - 10 * 86_400_000);
      await store.changes.importItems(importSource([item(1n), item(2n)]), importPlan(false, old));
      for (let q = 2; q <= 4; q++) await store.changes.applyChange(change(1n, q, { at: old }));
      await store.changes.retireEntry(2n, { force: true, at: new Date() });
      // 1, 2 created; 3, 4, 5 updated; 6 deleted.
      assert.deepEqual(await store.events.countEvents(0, 10), { byType: { 'inventory.created': 2, 'inventory.updated': 3, 'inventory.deleted': 1 }, counted: 6, last: 6, head: 6 });
      assert.deepEqual(await store.events.countEvents(1, 3), { byType: { 'inventory.created': 1, 'inventory.updated': 2 }, counted: 3, last: 4, head: 6 });
      assert.deepEqual(await store.events.countEvents(6, 10), { byType: {}, counted: 0, last: 6, head: 6 }, 'at the head: none, and last is where it asked from');
      assert.deepEqual(await store.events.countEvents(60, 10), { byType: {}, counted: 0, last: 60, head: 6 });

      assert.equal(await store.events.purgeEvents(new Date(Date.now() - 86_400_000)), 5);
      assert.deepEqual(await store.events.countEvents(0, 10), { byType: { 'inventory.deleted': 1 }, counted: 1, last: 6, head: 6 }, 'the pruned are gone, not counted');
      // The same events a reader reads, counted: the two agree.
      await store.changes.applyChange(change(1n, 7));
      const read = (await store.events.readEvents(5, 10)).items;
      const counted = await store.events.countEvents(5, 10);
      assert.equal(counted.counted, read.length);
      assert.equal(counted.last, read.at(-1)!.seq);
    });

    it('onAppended is called after a commit that appended, until stopped; a closed store refuses new listeners', async (t) => {
      const db = await createTestDatabase(backend, t);
      const store = await db.open();
      await store.changes.addItems([item(1n)]);
      let calls = 0;
      const stop = store.events.onAppended(() => calls++);
      await store.changes.applyChange(change(1n, 2));
      await waitUntil('a call after applyChange', () => calls > 0);
      const afterChange = calls;
      await store.changes.retireEntry(1n, { force: true, at: new Date() });
      await waitUntil('a call after retireEntry', () => calls > afterChange);
      stop();
      const stopped = calls;
      await store.changes.addItems([item(2n)]);
      await sleep(50);
      assert.equal(calls, stopped, 'no call once stopped');
      await store.close();
      assert.throws(() => store.events.onAppended(() => {}), { name: 'StoreUnavailableError' });
    });

    it('a list read with changesSince carries the events head of the same read: the list then the events after it give the final list', async (t) => {
      const db = await createTestDatabase(backend, t);
      const [writer, reader] = [await db.open(), await db.open()];
      await writer.changes.addItems(Array.from({ length: 10 }, (_, i) => item(BigInt(i), 0)));
      let stop = false;
      const writing = (async () => {
        for (let n = 1; !stop || n < 50; n++) await writer.changes.applyChange(change(BigInt(n % 10), n));
      })();
      await sleep(20);
      const list = await reader.entries.changesSince(-1);
      stop = true;
      await writing;
      // Replaying every event up to the head reproduces the list; those after it bring it to the final one.
      const all = await eventsAfter(reader, 0, 1000);
      const replay = (events: readonly StockEvent[], into: Map<bigint, number>) => {
        for (const e of events) {
          if (e.quantity === null) into.delete(e.petId);
          else into.set(e.petId, e.quantity);
        }
        return into;
      };
      const upToHead = replay(all.filter((e) => e.seq <= list.eventsHead), new Map());
      assert.deepEqual(upToHead, new Map(list.items.map((i) => [i.petId, i.quantity])));
      const followed = replay(all.filter((e) => e.seq > list.eventsHead), new Map(list.items.map((i) => [i.petId, i.quantity])));
      assert.deepEqual(followed, new Map((await reader.entries.listInventory()).map((i) => [i.petId, i.quantity])));
    });

    it('a reader following readEvents while 20 writers change 50 pets sees every event once, in seq order, and ends at the list', async (t) => {
      const db = await createTestDatabase(backend, t);
      const [store, other, follower] = [await db.open(), await db.open(), await db.open()];
      const pets = Array.from({ length: 50 }, (_, i) => BigInt(i + 1));
      await store.changes.addItems(pets.map((petId) => item(petId, 0)));
      const seen: StockEvent[] = [];
      let done = false;
      const following = (async () => {
        let after = 0;
        for (;;) {
          const finished = done;
          const page = await follower.events.readEvents(after, 37);
          assert.equal(page.pruned, false);
          seen.push(...stockEvents(page.items));
          if (page.items.length > 0) after = page.items.at(-1)!.seq;
          else if (finished) return;
          else await sleep(2);
        }
      })();
      // 20 writers on two stores (two instances), each changing pets at random, with and without If-Match.
      const writers = Array.from({ length: 20 }, async (_, w) => {
        const on = w % 2 ? store : other;
        for (let n = 0; n < 15; n++) {
          const petId = pets[(w * 7 + n * 13) % pets.length]!;
          const condition = n % 3 === 0 ? { condition: { anyVersion: false as const, versions: [(await on.entries.getEntry(petId))!.version] } } : {};
          await on.changes.applyChange(change(petId, w * 100 + n, { requestId: `w${w}-${n}`, ...condition }));
        }
      });
      await Promise.all(writers);
      done = true;
      await following;

      const seqs = seen.map((e) => e.seq);
      assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b), 'in seq order');
      assert.equal(new Set(seqs).size, seqs.length, 'each once');
      assert.deepEqual(seqs, (await eventsAfter(follower, 0, 1000)).map((e) => e.seq), 'every event in the log');
      const last = new Map<bigint, StockEvent>();
      for (const e of seen) last.set(e.petId, e);
      const list = await follower.entries.listInventory();
      assert.deepEqual(list.map((i) => [i.petId, i.quantity]), [...last.values()].sort((a, b) => (a.petId < b.petId ? -1 : 1)).map((e) => [e.petId, e.quantity]));
      for (const i of list) assert.equal((await follower.entries.getEntry(i.petId))!.version, last.get(i.petId)!.version);
    });
  });
}
