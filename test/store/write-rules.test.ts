import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { encodeOutcome, idempotencyKeyHash, judgeIdempotency, type IdempotencyRecord } from '../../src/domain/idempotency.js';
import {
  judgeChange,
  writesChange,
  type ChangeResult,
  type CountChange,
  type CountOrigin,
  type InventoryEntry,
  type VersionCondition,
} from '../../src/domain/inventory.js';
import { QUANTITY_MAX } from '../../src/schemas/values.js';
import type { InventoryItem } from '../../src/schemas/inventory.js';
import type { Store } from '../../src/store/store.js';
import { BACKENDS, backendSkip, createTestDatabase, openTestStore, type TestDatabase } from '../support/backends.js';
import { adjustment, change, importPlan, importSource } from '../support/store.js';

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
      const cases: { origin: CountOrigin; current: number; quantity: number }[] = [
        { origin: 'request', current: 4, quantity: 4 },
        { origin: 'request', current: 4, quantity: 5 },
        { origin: 'stocktake', current: 4, quantity: 4 },
        { origin: 'stocktake', current: 4, quantity: 5 },
      ];
      await store.changes.addItems(cases.map((c, i) => item(BigInt(i + 1), c.current)));
      for (const [i, c] of cases.entries()) {
        const petId = BigInt(i + 1);
        if (c.origin === 'request') await store.changes.applyChange(change(petId, c.quantity));
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

/** Every idempotency record the test API key holds, as the cap counts them. */
async function recordsHeld(db: TestDatabase): Promise<number> {
  const rows = await db.sql<{ records: number | string }>("SELECT records FROM idempotency_counts WHERE api_key_id = 'key_test'");
  return Number(rows[0]?.records ?? 0);
}
