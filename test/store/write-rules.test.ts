import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { encodeOutcome, idempotencyKeyHash, judgeIdempotency, type IdempotencyRecord } from '../../src/domain/idempotency.js';
import type { StockEvent } from '../../src/domain/event.js';
import { judgeChange, type ChangeResult, type CountChange, type InventoryEntry, type VersionCondition } from '../../src/domain/inventory.js';
import { eventOf, writesChange, WRITE_KINDS, type WriteFacts, type WriteKind } from '../../src/domain/write-kinds.js';
import { QUANTITY_MAX } from '../../src/schemas/values.js';
import type { InventoryItem } from '../../src/schemas/inventory.js';
import type { Store } from '../../src/store/store.js';
import { BACKENDS, backendSkip, createTestDatabase, openTestStore, type TestDatabase } from '../support/backends.js';
import { adjustment, change, changeBatch, eventsAfter, importPlan, importSource } from '../support/store.js';

/**
 * The rules every write follows live once, in src/domain; where a backend judges in SQL, these
 * tests send the same cases through the domain function and through every backend and compare.
 */

const DAY_MS = 86_400_000;
/** The version every held entry is at when the cases run: created at 1, changed twice. */
const CURRENT = 3;

type EntryState = 'held' | 'retired' | 'none';
const ENTRY_STATES: readonly EntryState[] = ['held', 'retired', 'none'];

/** If-Match as the service hands it to the store (a weak tag never matches, so only weak tags is an empty list). */
const CONDITIONS: readonly { name: string; condition: VersionCondition | undefined }[] = [
  { name: 'no If-Match', condition: undefined },
  { name: 'If-Match: *', condition: { anyVersion: true } },
  { name: 'the current version', condition: { anyVersion: false, versions: [CURRENT] } },
  { name: 'an older version', condition: { anyVersion: false, versions: [CURRENT - 1] } },
  { name: 'several, one of them current', condition: { anyVersion: false, versions: [1, CURRENT, CURRENT + 5] } },
  { name: 'only weak tags', condition: { anyVersion: false, versions: [] } },
];

function item(petId: bigint, quantity: number): InventoryItem {
  return { petId, quantity, status: 'available' };
}

/** Puts each pet in its state: held at version CURRENT with quantity 5, retired, or never added; the entry a change will find of each. */
async function entriesIn(store: Store, states: readonly EntryState[]): Promise<(InventoryEntry | undefined)[]> {
  const petIds = states.map((_, i) => BigInt(i + 1));
  const added = petIds.filter((_, i) => states[i] !== 'none');
  await store.changes.addItems(added.map((petId) => item(petId, 4)));
  // Changes sent together share a commit.
  await Promise.all(added.map((petId) => store.changes.applyChange(change(petId, 6))));
  await Promise.all(added.map((petId) => store.changes.applyChange(change(petId, 5))));
  for (const [i, petId] of petIds.entries()) if (states[i] === 'retired') await store.changes.retireEntry(petId, { force: true, at: new Date() });
  return petIds.map((petId, i) => (states[i] === 'held' ? { item: item(petId, 5), version: CURRENT } : undefined));
}

/** What a change does to the count, as the store gets it: each bound's both sides, from the 5 a held entry holds. */
const COUNTS: readonly { name: string; count: CountChange }[] = [
  { name: 'set 9', count: { quantity: 9 } },
  { name: 'set past the maximum', count: { quantity: QUANTITY_MAX + 1 } },
  { name: 'delta -5, to 0', count: { delta: -5 } },
  { name: 'delta -6, below 0', count: { delta: -6 } },
  { name: 'delta to the maximum', count: { delta: QUANTITY_MAX - 5 } },
  { name: 'delta past the maximum', count: { delta: QUANTITY_MAX - 4 } },
  { name: 'the largest delta', count: { delta: QUANTITY_MAX } },
  { name: 'the smallest delta', count: { delta: -QUANTITY_MAX } },
];

/** What judgeChange says a change does, in the form a store answers. */
function expectedOf(current: InventoryEntry | undefined, condition: VersionCondition | undefined, count: CountChange | number): ChangeResult {
  const verdict = judgeChange(current, { ...(typeof count === 'number' ? { quantity: count } : count), condition });
  if (verdict.kind !== 'apply') return { ...verdict, replayed: false };
  return { kind: 'updated', entry: { item: { ...verdict.current.item, quantity: verdict.quantity }, version: verdict.current.version + 1 }, replayed: false };
}

/** An idempotency record as a backend may find it, written outside the store. */
interface RecordCase {
  name: string;
  record: (IdempotencyRecord & { fingerprintOf: 'same' | 'other' }) | undefined;
}

const RECORD_CASES: readonly RecordCase[] = [
  { name: 'no record', record: undefined },
  { name: 'a live record of the same request', record: { fingerprintOf: 'same', fingerprint: '', outcome: 'stored', expired: false } },
  { name: 'a live record of another request', record: { fingerprintOf: 'other', fingerprint: '', outcome: 'stored', expired: false } },
  { name: 'an expired record of another request', record: { fingerprintOf: 'other', fingerprint: '', outcome: 'stored', expired: true } },
  { name: 'a live record without an outcome, same request', record: { fingerprintOf: 'same', fingerprint: '', outcome: null, expired: false } },
  { name: 'a live record without an outcome, another request', record: { fingerprintOf: 'other', fingerprint: '', outcome: null, expired: false } },
];

for (const backend of BACKENDS) {
  describe(`The write rules on ${backend}, held to src/domain`, { skip: await backendSkip(backend) }, () => {
    it('If-Match: every entry state and condition gives what judgeChange gives (decisions 5.5)', async (t) => {
      const store = await openTestStore(backend, t);
      const cases = ENTRY_STATES.flatMap((state) => CONDITIONS.map((c) => ({ state, ...c })));
      const current = await entriesIn(store, cases.map((c) => c.state));
      for (const [i, c] of cases.entries()) {
        const got = await store.changes.applyChange(change(BigInt(i + 1), 9, { condition: c.condition }));
        assert.deepEqual(got, expectedOf(current[i], c.condition, 9), `${c.state} entry, ${c.name}`);
      }
    });

    it('a count set or moved by a delta: every entry state, condition and count gives what judgeChange gives (decisions 5.11)', async (t) => {
      const store = await openTestStore(backend, t);
      const cases = ENTRY_STATES.flatMap((state) => CONDITIONS.flatMap((c) => COUNTS.map((n) => ({ state, ...c, ...n }))));
      const current = await entriesIn(store, cases.map((c) => c.state));
      for (const [i, c] of cases.entries()) {
        const petId = BigInt(i + 1);
        const extra = { condition: c.condition };
        const request = c.count.delta === undefined ? change(petId, c.count.quantity, extra) : adjustment(petId, c.count.delta, extra);
        const got = await store.changes.applyChange(request);
        const expected = expectedOf(current[i], c.condition, c.count);
        assert.deepEqual(got, expected, `${c.state} entry, ${c.name}, ${c.count.quantity === undefined ? `delta ${c.count.delta}` : `set ${c.count.quantity}`}`);
        const entry = await store.entries.getEntry(petId);
        const after = expected.kind === 'updated' ? expected.entry : current[i];
        assert.deepEqual(entry, after, `${c.state} entry, ${c.name}: the entry stored`);
      }
    });

    it('Idempotency-Key: every record a change can find gives what judgeIdempotency gives (decisions 5.6)', async (t) => {
      const db = await createTestDatabase(backend, t);
      const store = await db.open();
      await store.changes.addItems(RECORD_CASES.map((_, i) => item(BigInt(i + 1), 1)));
      const now = Date.now();
      for (const [i, c] of RECORD_CASES.entries()) {
        const petId = BigInt(i + 1);
        // What an earlier request on this pet was answered (a fingerprint names its pet, so a record is of its own pet).
        const earlier = { kind: 'updated', entry: { item: item(petId, 7), version: 9 } } as const;
        const key = `case-${i}`;
        const fingerprint = `fp-${i}`;
        const record = c.record && {
          fingerprint: c.record.fingerprintOf === 'same' ? fingerprint : 'fp-other',
          outcome: c.record.outcome === null ? null : encodeOutcome(earlier),
          expired: c.record.expired,
        };
        if (record) {
          const expiresAt = new Date(now + (record.expired ? -DAY_MS : DAY_MS)).toISOString();
          const outcome = record.outcome === null ? 'NULL' : `'${record.outcome}'`;
          await db.sql(`INSERT INTO idempotency_records (api_key_id, key_hash, fingerprint, outcome, created_at, expires_at)
            VALUES ('key_test', '${idempotencyKeyHash(key)}', '${record.fingerprint}', ${outcome}, '${new Date(now - DAY_MS).toISOString()}', '${expiresAt}')`);
        }
        const held = await recordsHeld(db);
        const request = change(petId, 2, { idempotency: { key, fingerprint, expiresAt: new Date(now + DAY_MS), recordsPerKey: 100 } });
        const got = await store.changes.applyChange(request);
        const verdict = judgeIdempotency(record, fingerprint);
        if (verdict.kind === 'answer') {
          assert.deepEqual(got, verdict.result, c.name);
          assert.equal(await recordsHeld(db), held, `${c.name}: nothing written`);
          continue;
        }
        assert.deepEqual(got, { kind: 'updated', entry: { item: item(petId, 2), version: 2 }, replayed: false }, `${c.name}: applied`);
        // A new record takes a row of the API key's count; one written over in place does not.
        assert.equal(await recordsHeld(db), held + (verdict.kind === 'new' ? 1 : 0), `${c.name}: ${verdict.kind}`);
        assert.deepEqual(await store.changes.applyChange(request), { ...got, replayed: true }, `${c.name}: the same request again is replayed`);
      }
    });

    it('the no-op rule: a request always writes a change, a stocktake only a count that differs (decisions 5.4, 5.8)', async (t) => {
      const db = await createTestDatabase(backend, t);
      const store = await db.open();
      const cases: { origin: Extract<WriteKind, 'updated' | 'imported'>; current: number; quantity: number }[] = [
        { origin: 'updated', current: 4, quantity: 4 },
        { origin: 'updated', current: 4, quantity: 5 },
        { origin: 'imported', current: 4, quantity: 4 },
        { origin: 'imported', current: 4, quantity: 5 },
      ];
      await store.changes.addItems(cases.map((c, i) => item(BigInt(i + 1), c.current)));
      for (const [i, c] of cases.entries()) {
        const petId = BigInt(i + 1);
        if (c.origin === 'updated') await store.changes.applyChange(change(petId, c.quantity));
        else await store.changes.importItems(importSource([item(petId, c.quantity)]), importPlan(true));
        const written = writesChange(c.origin, c.current, c.quantity);
        const entry = await store.entries.getEntry(petId);
        const rows = (await store.history.listHistory(petId, { limit: 10 }))!;
        const name = `${c.origin} of ${c.quantity} on ${c.current}`;
        assert.deepEqual(entry, { item: item(petId, c.quantity), version: written ? 2 : 1 }, `${name}: version`);
        assert.deepEqual(rows.map((r) => [r.previousQuantity, r.quantity]), written ? [[c.current, c.quantity]] : [], `${name}: history`);
      }
    });
  });
}

/** A write of one pet and the facts domain eventOf makes its event of, or none when it writes nothing. */
interface WriteCase {
  name: string;
  kind: WriteKind;
  write: (store: Store) => Promise<unknown>;
  /** The facts of the write, from the entry before it (undefined: none, or retired); undefined when it writes nothing. */
  facts: (before: InventoryEntry | undefined, retired: InventoryEntry | undefined) => WriteFacts | undefined;
}

const WHEN = new Date('2026-11-26T10:00:00.000Z');
const API = { source: 'api', keyId: 'key_test', requestId: 'req-test' } as const;

/** Each kind of write, by every path that makes it; pet 1 is held at 5 (version 1), pet 2 retired at 3 (version 2), pet 3 never added. */
const WRITES: readonly WriteCase[] = [
  {
    name: 'pets add of a new entry',
    kind: 'created',
    write: (store) => store.changes.addItems([item(3n, 7)]),
    facts: () => ({ petId: 3n, status: 'available', before: null, after: 7, version: 1, at: WHEN }),
  },
  {
    name: 'pets add of a retired entry (a revival)',
    kind: 'created',
    write: (store) => store.changes.addItems([item(2n, 7)]),
    facts: (_, retired) => ({ petId: 2n, status: 'available', before: null, after: 7, version: retired!.version + 1, at: WHEN }),
  },
  {
    name: 'pets import of a new entry',
    kind: 'created',
    write: (store) => store.changes.importItems(importSource([item(3n, 7)]), importPlan(true, WHEN)),
    facts: () => ({ petId: 3n, status: 'available', before: null, after: 7, version: 1, at: WHEN }),
  },
  {
    name: 'pets import of a retired entry (a revival)',
    kind: 'created',
    write: (store) => store.changes.importItems(importSource([item(2n, 7)]), importPlan(true, WHEN)),
    facts: (_, retired) => ({ petId: 2n, status: 'available', before: null, after: 7, version: retired!.version + 1, at: WHEN }),
  },
  {
    name: 'a PATCH',
    kind: 'updated',
    write: (store) => store.changes.applyChange(change(1n, 9, { at: WHEN, reason: 'received' })),
    facts: (held) => ({ ...changed(held!, 9), reason: 'received', origin: API }),
  },
  {
    name: 'a PATCH to the count held',
    kind: 'updated',
    write: (store) => store.changes.applyChange(change(1n, 5, { at: WHEN })),
    facts: (held) => ({ ...changed(held!, 5), reason: null, origin: API }),
  },
  {
    name: 'an adjustment',
    kind: 'updated',
    write: (store) => store.changes.applyChange(adjustment(1n, -2, { at: WHEN, reason: 'sold' })),
    facts: (held) => ({ ...changed(held!, 3), reason: 'sold', origin: API }),
  },
  {
    name: 'a change of a batch',
    kind: 'updated',
    write: (store) => store.changes.applyBatch(changeBatch([{ petId: 1n, delta: 4 }], { at: WHEN })),
    facts: (held) => ({ ...changed(held!, 9), reason: null, origin: API }),
  },
  {
    name: 'pets adjust (a change of the CLI)',
    kind: 'updated',
    write: (store) => store.changes.applyChange(adjustment(1n, 1, { source: 'cli', keyId: 'cli:adjust', keyName: 'adjust', requestId: 'adjust-1', at: WHEN })),
    facts: (held) => ({ ...changed(held!, 6), reason: null, origin: { source: 'cli', keyId: 'cli:adjust', requestId: 'adjust-1' } }),
  },
  {
    name: 'a stocktake of another count',
    kind: 'imported',
    write: (store) => store.changes.importItems(importSource([item(1n, 8)]), importPlan(true, WHEN)),
    facts: (held) => changed(held!, 8),
  },
  {
    name: 'a stocktake of the count held',
    kind: 'imported',
    write: (store) => store.changes.importItems(importSource([item(1n, 5)]), importPlan(true, WHEN)),
    facts: (held) => (writesChange('imported', held!.item.quantity, 5) ? changed(held!, 5) : undefined),
  },
  {
    name: 'pets remove',
    kind: 'deleted',
    write: (store) => store.changes.retireEntry(1n, { force: true, at: WHEN }),
    facts: (held) => changed(held!, 5),
  },
];

/** The facts of a write that sets a held entry's count to `quantity`. */
function changed(held: InventoryEntry, quantity: number): WriteFacts {
  return { petId: held.item.petId, status: held.item.status, before: held.item.quantity, after: quantity, version: held.version + 1, at: WHEN };
}

/** An event as compared: without its seq, and its time where the store takes it from its own clock (a creation, a removal's given one aside). */
function comparable({ seq: _seq, occurredAt, ...rest }: Partial<StockEvent> & ReturnType<typeof eventOf>, kind: WriteKind): object {
  return kind === 'created' ? rest : { ...rest, occurredAt };
}

for (const backend of BACKENDS) {
  describe(`What each kind of write records on ${backend}, held to the domain table of write kinds`, { skip: await backendSkip(backend) }, () => {
    for (const c of WRITES) {
      it(`${c.name}: the event eventOf('${c.kind}') makes of it, and a history row as WRITE_KINDS says`, async (t) => {
        const store = await openTestStore(backend, t);
        await store.changes.addItems([item(1n, 5), item(2n, 3)]);
        await store.changes.applyChange(change(2n, 3));
        await store.changes.retireEntry(2n, { force: true, at: new Date() });
        const held = await store.entries.getEntry(1n);
        const retired = { item: item(2n, 3), version: 3 };
        const head = await store.events.head();
        const historyBefore = await Promise.all([1n, 2n, 3n].map(async (petId) => (await store.history.listHistory(petId, { limit: 10 }))?.length ?? 0));
        await c.write(store);
        const facts = c.facts(held, retired);
        const events = await eventsAfter(store, head);
        assert.deepEqual(
          events.map((e) => comparable(e, c.kind)),
          facts ? [comparable(eventOf(c.kind, facts), c.kind)] : [],
        );
        const historyAfter = await Promise.all([1n, 2n, 3n].map(async (petId) => (await store.history.listHistory(petId, { limit: 10 }))?.length ?? 0));
        const written = facts && WRITE_KINDS[c.kind].history ? [facts.petId] : [];
        assert.deepEqual(
          [1n, 2n, 3n].filter((_, i) => historyAfter[i] !== historyBefore[i]),
          written,
          'the pets that got a history row',
        );
      });
    }

    it("changes of the API and of the CLI committed together each carry their own source, and the key and request ids only the API's", async (t) => {
      const store = await openTestStore(backend, t);
      const pets = [1n, 2n, 3n, 4n, 5n];
      await store.changes.addItems(pets.map((petId) => item(petId, 5)));
      const head = await store.events.head();
      const sources = ['api', 'cli', 'cli', 'api', 'cli'] as const;
      // Sent together, they share a batch: runs of each source, in the order sent.
      const results = await Promise.all(pets.map((petId, i) => store.changes.applyChange(adjustment(petId, 1, { source: sources[i], requestId: `req-${i}`, at: WHEN }))));
      assert.deepEqual(results.map((r) => r.kind), Array<string>(5).fill('updated'));
      const events = (await eventsAfter(store, head)).sort((a, b) => (a.petId < b.petId ? -1 : 1));
      assert.deepEqual(
        events.map((e) => [e.petId, e.source, e.keyId, e.requestId]),
        pets.map((petId, i) => [petId, sources[i], sources[i] === 'api' ? 'key_test' : null, sources[i] === 'api' ? `req-${i}` : null]),
      );
      const rows = await Promise.all(pets.map(async (petId) => (await store.history.listHistory(petId, { limit: 1 }))![0]!));
      assert.deepEqual(rows.map((r) => [r.keyId, r.requestId]), pets.map((_, i) => ['key_test', `req-${i}`]), 'the history keeps who asked, whatever the source');
    });
  });
}

/** Every idempotency record the test API key holds, as the cap counts them. */
async function recordsHeld(db: TestDatabase): Promise<number> {
  const rows = await db.sql<{ records: number | string }>("SELECT records FROM idempotency_counts WHERE api_key_id = 'key_test'");
  return Number(rows[0]?.records ?? 0);
}
