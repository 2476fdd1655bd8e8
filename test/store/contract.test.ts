import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { describe, it, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { hashKey, type ApiKeyRecord } from '../../src/domain/api-key.js';
import { INT64_MAX, INT64_MIN } from '../../src/domain/pet-id.js';
import { StoreUnavailableError } from '../../src/errors.js';
import type { InventoryItem, PetStatus } from '../../src/schemas/inventory.js';
import { APPLICATION_NAME, CONNECTION_TIMEOUT_MS, QUERY_TIMEOUT_GRACE_MS } from '../../src/store/postgres/connection.js';
import { openStore as openPostgresStore } from '../../src/store/postgres/open.js';
import { openStore } from '../../src/store/open.js';
import { DuplicatePetError, type Changes, type PortName, type Store } from '../../src/store/store.js';
import {
  BACKENDS,
  MIGRATION_VERSIONS,
  TEST_DATABASE_URL,
  adminQuery,
  backendSkip,
  createTestDatabase,
  openTestStore,
} from '../support/backends.js';
import { newReservation, testOrigin } from '../support/reservations.js';
import { change, changeBatch, importPlan, importSource, itemOf, setQuantity } from '../support/store.js';
import { withDeadline } from '../support/process.js';
import { TcpProxy } from '../support/tcp-proxy.js';

const TWO_53 = 2n ** 53n;
/** How long a test waits for what must happen before it gives up: a deadline on waiting, never a measure of speed. */
const LIVENESS_MS = 10_000;

function item(petId: bigint, quantity = 1, status: PetStatus = 'available'): InventoryItem {
  return { petId, quantity, status };
}

/** A key record with millisecond timestamps, n days into 2024. */
function keyRecord(n: number, overrides: Partial<ApiKeyRecord> = {}): ApiKeyRecord {
  return {
    id: `key_${n}`,
    name: `key ${n}`,
    environment: 'production',
    keyHash: hashKey(`secret-${n}`),
    hint: `h${n}`.padStart(4, '0'),
    scopes: ['inventory:read'],
    createdAt: new Date(Date.UTC(2024, 0, n, 10, 20, 30, 123 + n)),
    lastUsedAt: null,
    expiresAt: null,
    revokedAt: null,
    ...overrides,
  };
}

/** A rejection that is neither "unavailable" nor "duplicate": the database refused the value itself. */
async function rejectsAsInvalid(promise: Promise<unknown>): Promise<void> {
  await assert.rejects(promise, (err: unknown) => {
    assert.ok(err instanceof Error, 'rejects with an Error');
    assert.ok(!(err instanceof StoreUnavailableError), `not StoreUnavailableError: ${String(err)}`);
    assert.ok(!(err instanceof DuplicatePetError), `not DuplicatePetError: ${String(err)}`);
    return true;
  });
}

/** One call per member of every port; the type makes a new member, or a new port, a compile error until it is listed. */
const EVERY_CALL = {
  entries: {
    listInventory: (s) => s.entries.listInventory(),
    listInventoryPage: (s) => s.entries.listInventoryPage(undefined, 10),
    getEntry: (s) => s.entries.getEntry(1n),
    readVersion: (s) => s.entries.readVersion(),
    changesSince: (s) => s.entries.changesSince(-1),
  },
  changes: {
    applyChange: (s) => s.changes.applyChange(change(1n, 2)),
    applyBatch: (s) => s.changes.applyBatch(changeBatch([{ petId: 1n, delta: 1 }, { petId: 2n, quantity: 3 }])),
    addItems: (s) => s.changes.addItems([item(2n)]),
    retireEntry: (s) => s.changes.retireEntry(1n, { force: true, at: new Date() }),
    importItems: (s) => s.changes.importItems(importSource([item(3n)]), importPlan()),
  },
  keys: {
    insertApiKey: (s) => s.keys.insertApiKey(keyRecord(9)),
    insertFirstApiKey: (s) => s.keys.insertFirstApiKey(keyRecord(8)),
    findApiKeyByHash: (s) => s.keys.findApiKeyByHash(keyRecord(1).keyHash),
    listApiKeys: (s) => s.keys.listApiKeys(),
    revokeApiKey: (s) => s.keys.revokeApiKey('key_1', new Date()),
    touchApiKey: (s) => s.keys.touchApiKey('key_1', new Date()),
  },
  history: {
    listHistory: (s) => s.history.listHistory(1n, { limit: 10 }),
  },
  events: {
    readEvents: (s) => s.events.readEvents(0, 10),
    countEvents: (s) => s.events.countEvents(0, 10),
    head: (s) => s.events.head(),
    // Answers at once: as a call that settles, so that a closed store's refusal is seen like the others'.
    onAppended: async (s) => s.events.onAppended(() => {}),
    purgeEvents: (s) => s.events.purgeEvents(new Date()),
  },
  webhookEndpoints: {
    addEndpoint: (s) =>
      s.webhookEndpoints.addEndpoint({ id: 'whk_1', url: 'https://example.com/hook', description: null, secret: 'whsec_AAAA', createdAt: new Date() }),
    listEndpoints: (s) => s.webhookEndpoints.listEndpoints(),
    getEndpoint: (s) => s.webhookEndpoints.getEndpoint('whk_1'),
    removeEndpoint: (s) => s.webhookEndpoints.removeEndpoint('whk_2'),
    disableEndpoint: (s) => s.webhookEndpoints.disableEndpoint('whk_1', 'disabled by an operator'),
    enableEndpoint: (s) => s.webhookEndpoints.enableEndpoint('whk_1'),
    rotateSecret: (s) => s.webhookEndpoints.rotateSecret('whk_1', 'whsec_BBBB', new Date()),
    replayFrom: (s) => s.webhookEndpoints.replayFrom('whk_none', 0),
    updateEndpoint: (s) => s.webhookEndpoints.updateEndpoint('whk_1', { maxInFlight: 4 }),
    recordAttempts: (s) =>
      s.webhookEndpoints.recordAttempts([
        { endpointId: 'whk_1', eventId: 'evt_test', seq: 0, attemptedAt: new Date(), status: 200, error: null, durationMs: 1, responseBody: null },
      ]),
    listDeliveries: (s) => s.webhookEndpoints.listDeliveries('whk_1', 10),
  },
  webhookDeliveries: {
    leaseEndpoints: (s) => s.webhookDeliveries.leaseEndpoints('holder', 1000),
    releaseLeases: (s) => s.webhookDeliveries.releaseLeases('holder'),
    recordProgress: (s) =>
      s.webhookDeliveries.recordProgress('whk_1', 'holder', { attempts: [], deliveredSeq: 0, deliveredAbove: [], retrying: [], failures: 0, nextAttemptAt: null, lastFailureAt: null, lastFailure: null }),
    endpointsVersion: (s) => s.webhookDeliveries.endpointsVersion(),
    // Answers at once, as onAppended.
    onEndpointsChanged: async (s) => s.webhookDeliveries.onEndpointsChanged(() => {}),
  },
  relays: {
    lease: (s) => s.relays.lease('relay', 'holder', 1000),
    recordPosition: (s) => s.relays.recordPosition('relay', 'holder', 1),
    release: (s) => s.relays.release('relay', 'holder'),
  },
  reservations: {
    create: (s) => s.reservations.create(newReservation([[1n, 1]])),
    get: (s) => s.reservations.get('res_none'),
    list: (s) => s.reservations.list({ limit: 10 }),
    end: (s) => s.reservations.end('res_none', 'release', testOrigin()),
    expireDue: (s) => s.reservations.expireDue(),
    held: (s) => s.reservations.held(),
  },
  maintenance: {
    durability: (s) => s.maintenance.durability(),
    ping: (s) => s.maintenance.ping(),
    purgeIdempotencyRecords: (s) => s.maintenance.purgeIdempotencyRecords(new Date()),
    purgeHistory: (s) => s.maintenance.purgeHistory(new Date()),
    purgeDeliveries: (s) => s.maintenance.purgeDeliveries(new Date()),
  },
} satisfies { [P in PortName]: Record<keyof Store[P], (s: Store) => Promise<unknown>> };

/** What a write leaves for changesSince to report: the entries it created or changed, and those it retired. */
interface Written {
  items: InventoryItem[];
  removed: bigint[];
}

/**
 * One write through each member of the changes port on a store holding pets 1 and 2, and what it
 * leaves behind: every write of entries must be seen by changesSince (the list cache and, later,
 * change events depend on it). The type makes a new member a compile error until it is listed here.
 */
const WRITES_SEEN = {
  applyChange: async (s) => {
    await s.changes.applyChange(change(2n, 9));
    return { items: [item(2n, 9)], removed: [] };
  },
  applyBatch: async (s) => {
    // Listed in the order given, changesSince in petId order.
    await s.changes.applyBatch(changeBatch([{ petId: 2n, delta: 1 }, { petId: 1n, quantity: 3 }]));
    return { items: [item(1n, 3), item(2n, 10)], removed: [] };
  },
  addItems: async (s) => {
    await s.changes.addItems([item(3n, 4, 'pending')]);
    return { items: [item(3n, 4, 'pending')], removed: [] };
  },
  retireEntry: async (s) => {
    await s.changes.retireEntry(1n, { force: true, at: new Date() });
    return { items: [], removed: [1n] };
  },
  importItems: async (s) => {
    // Pet 2 gets the file's quantity, pet 5 is created; pet 3, as it is, is left alone.
    const { quantity } = (await s.entries.getEntry(2n))!.item;
    await s.changes.importItems(importSource([item(2n, quantity + 1), item(5n, 2, 'sold'), (await s.entries.getEntry(3n))!.item]), importPlan(true));
    return { items: [item(2n, quantity + 1), item(5n, 2, 'sold')], removed: [] };
  },
} satisfies Record<keyof Changes, (s: Store) => Promise<Written>>;

for (const backend of BACKENDS) {
  describe(`Store on ${backend}`, { skip: await backendSkip(backend) }, () => {
    it('starts empty, names its backend and answers ping', async (t) => {
      const store = await openTestStore(backend, t);
      assert.equal(store.backend, backend);
      await store.maintenance.ping();
      assert.deepEqual(await store.entries.listInventory(), []);
      assert.deepEqual(await store.keys.listApiKeys(), []);
      assert.equal((await store.keys.listApiKeys()).length, 0);
    });

    it('lists entries by petId ascending, exact over the whole int64 range', async (t) => {
      const store = await openTestStore(backend, t);
      const ids = [INT64_MAX, 0n, TWO_53 + 1n, -1n, TWO_53, INT64_MIN, TWO_53 - 1n, -(TWO_53 + 1n), 1n, INT64_MAX - 1n];
      await store.changes.addItems(ids.map((id, i) => item(id, i, i % 2 ? 'pending' : 'sold')));

      const expected = ids.map((id, i) => item(id, i, i % 2 ? 'pending' : 'sold')).sort((a, b) => (a.petId < b.petId ? -1 : 1));
      assert.deepEqual(await store.entries.listInventory(), expected);
      assert.equal(expected[0]!.petId, INT64_MIN);
      assert.equal(expected.at(-1)!.petId, INT64_MAX);
      for (const entry of expected) assert.deepEqual(await itemOf(store, entry.petId), entry);
    });

    it('listInventoryPage reads the list in keyset pages, exact over the whole int64 range, retired entries left out', async (t) => {
      const store = await openTestStore(backend, t);
      const ids = [INT64_MAX, 0n, TWO_53 + 1n, -1n, TWO_53, INT64_MIN, 7n, -(TWO_53 + 1n), 1n, INT64_MAX - 1n];
      await store.changes.addItems(ids.map((id) => item(id, 1, 'pending')));
      await store.changes.retireEntry(7n, { force: true, at: new Date() });
      const expected = await store.entries.listInventory();
      assert.equal(expected.length, ids.length - 1);
      for (const limit of [1, 3, 9, 10]) {
        const read: InventoryItem[] = [];
        let after: bigint | undefined;
        for (;;) {
          const page = await store.entries.listInventoryPage(after, limit);
          assert.ok(page.length <= limit);
          read.push(...page);
          if (page.length < limit) break;
          after = page.at(-1)!.petId;
        }
        assert.deepEqual(read, expected, `pages of ${limit}`);
      }
      assert.deepEqual(await store.entries.listInventoryPage(INT64_MAX, 5), []);
      assert.deepEqual(await store.entries.listInventoryPage(INT64_MIN, 2), [item(-(TWO_53 + 1n), 1, 'pending'), item(-1n, 1, 'pending')], 'strictly after');
    });

    it('getEntry of a petId with no entry is undefined', async (t) => {
      const store = await openTestStore(backend, t);
      await store.changes.addItems([item(TWO_53)]);
      assert.equal(await itemOf(store, TWO_53 + 1n), undefined);
      assert.equal(await itemOf(store, INT64_MIN), undefined);
    });

    it('setQuantity returns the updated entry and never changes status', async (t) => {
      const store = await openTestStore(backend, t);
      await store.changes.addItems([item(INT64_MAX, 3, 'pending'), item(5n, 1, 'sold')]);

      assert.deepEqual(await setQuantity(store, INT64_MAX, 7), item(INT64_MAX, 7, 'pending'));
      assert.deepEqual(await itemOf(store, INT64_MAX), item(INT64_MAX, 7, 'pending'));
      assert.deepEqual(await setQuantity(store, INT64_MAX, 0), item(INT64_MAX, 0, 'pending'));
      assert.deepEqual(await setQuantity(store, INT64_MAX, 2147483647), item(INT64_MAX, 2147483647, 'pending'));
      assert.deepEqual(await itemOf(store, 5n), item(5n, 1, 'sold'), 'other entries untouched');
    });

    it('setQuantity of a petId with no entry is undefined and creates nothing', async (t) => {
      const store = await openTestStore(backend, t);
      await store.changes.addItems([item(1n)]);
      assert.equal(await setQuantity(store, 2n, 5), undefined);
      assert.deepEqual(await store.entries.listInventory(), [item(1n)]);
    });

    it('the database refuses quantities outside 0..2147483647 and unknown statuses', async (t) => {
      const store = await openTestStore(backend, t);
      await store.changes.addItems([item(1n, 4, 'available')]);

      // A change is judged first (domain judgeChange): a count out of bounds is an outcome, and the database never sees it.
      const entry = { item: item(1n, 4, 'available'), version: 1 };
      assert.deepEqual(await store.changes.applyChange(change(1n, -1)), { kind: 'insufficient_stock', entry, replayed: false });
      assert.deepEqual(await store.changes.applyChange(change(1n, 2147483648)), { kind: 'quantity_out_of_range', entry, replayed: false });
      await rejectsAsInvalid(setQuantity(store, 1n, 1.5));
      await rejectsAsInvalid(store.changes.addItems([item(2n, -1)]));
      await rejectsAsInvalid(store.changes.addItems([item(3n, 1, 'lost' as PetStatus)]));
      assert.deepEqual(await store.entries.listInventory(), [item(1n, 4, 'available')]);
    });

    it('addItems is all or nothing: a duplicate in the middle is named and nothing is inserted', async (t) => {
      const store = await openTestStore(backend, t);
      await store.changes.addItems([item(INT64_MIN, 9, 'sold')]);

      await assert.rejects(store.changes.addItems([item(10n), item(INT64_MIN), item(11n)]), (err: unknown) => {
        assert.ok(err instanceof DuplicatePetError);
        assert.equal(err.petId, INT64_MIN);
        return true;
      });
      await assert.rejects(store.changes.addItems([item(20n), item(TWO_53 + 1n), item(21n), item(TWO_53 + 1n)]), (err: unknown) => {
        assert.ok(err instanceof DuplicatePetError);
        assert.equal(err.petId, TWO_53 + 1n, 'a petId repeated within the batch');
        return true;
      });
      assert.deepEqual(await store.entries.listInventory(), [item(INT64_MIN, 9, 'sold')]);

      await store.changes.addItems([]);
      await store.changes.addItems([item(10n), item(11n)]);
      assert.deepEqual((await store.entries.listInventory()).map((i) => i.petId), [INT64_MIN, 10n, 11n]);
    });

    it('retireEntry refuses an entry in stock unless forced; a retired entry is no entry, but its history stays', async (t) => {
      const store = await openTestStore(backend, t);
      await store.changes.addItems([item(INT64_MAX, 5, 'sold'), item(7n, 0, 'pending'), item(8n)]);
      await setQuantity(store, INT64_MAX, 6);
      const at = new Date();

      assert.deepEqual(await store.changes.retireEntry(INT64_MAX, { force: false, at }), { kind: 'in_stock', item: item(INT64_MAX, 6, 'sold') });
      assert.deepEqual(await itemOf(store, INT64_MAX), item(INT64_MAX, 6, 'sold'), 'a refusal changes nothing');
      assert.deepEqual(await store.changes.retireEntry(7n, { force: false, at }), { kind: 'retired', item: item(7n, 0, 'pending') });
      assert.deepEqual(await store.changes.retireEntry(INT64_MAX, { force: true, at }), { kind: 'retired', item: item(INT64_MAX, 6, 'sold') });
      assert.deepEqual(await store.changes.retireEntry(7n, { force: true, at }), { kind: 'not_found' }, 'retired already');
      assert.deepEqual(await store.changes.retireEntry(9n, { force: true, at }), { kind: 'not_found' }, 'never an entry');

      assert.deepEqual(await store.entries.listInventory(), [item(8n)]);
      assert.equal(await store.entries.getEntry(INT64_MAX), undefined);
      assert.deepEqual(await store.changes.applyChange(change(INT64_MAX, 1)), { kind: 'not_found', replayed: false });
      assert.deepEqual(await store.changes.applyChange(change(7n, 1, { condition: { anyVersion: true } })), { kind: 'not_found', replayed: false });
      assert.deepEqual((await store.history.listHistory(INT64_MAX, { limit: 10 }))?.map((h) => [h.previousQuantity, h.quantity]), [[5, 6]]);
      assert.deepEqual(await store.history.listHistory(7n, { limit: 10 }), [], 'a retired entry without changes has an empty history');
      assert.equal(await store.history.listHistory(9n, { limit: 10 }), undefined);
    });

    it('addItems revives a retired entry with its new quantity and status; its version and history go on', async (t) => {
      const store = await openTestStore(backend, t);
      await store.changes.addItems([item(TWO_53 + 1n, 2, 'available')]);
      await setQuantity(store, TWO_53 + 1n, 3);
      const before = await store.entries.getEntry(TWO_53 + 1n);
      await store.changes.retireEntry(TWO_53 + 1n, { force: true, at: new Date() });
      await assert.rejects(store.changes.addItems([item(1n), item(TWO_53 + 1n, 0, 'sold'), item(TWO_53 + 1n, 1, 'sold')]), DuplicatePetError);
      assert.deepEqual(await store.entries.listInventory(), [], 'all or nothing');

      await store.changes.addItems([item(TWO_53 + 1n, 9, 'sold')]);
      const revived = await store.entries.getEntry(TWO_53 + 1n);
      assert.deepEqual(revived?.item, item(TWO_53 + 1n, 9, 'sold'));
      assert.ok(revived && before && revived.version > before.version, 'no ETag of the retired entry matches the revived one');
      await assert.rejects(store.changes.addItems([item(TWO_53 + 1n)]), DuplicatePetError, 'active again');
      await setQuantity(store, TWO_53 + 1n, 4);
      assert.deepEqual((await store.history.listHistory(TWO_53 + 1n, { limit: 10 }))?.map((h) => [h.previousQuantity, h.quantity]), [[9, 4], [2, 3]]);
    });

    it('api keys: insert, find by hash, list oldest first, with exact dates', async (t) => {
      const store = await openTestStore(backend, t);
      const newer = keyRecord(20, {
        scopes: ['inventory:read', 'inventory:write'],
        environment: 'staging',
        expiresAt: new Date('2031-02-03T04:05:06.789Z'),
        lastUsedAt: new Date('2024-01-21T00:00:00.001Z'),
      });
      const older = keyRecord(3, { scopes: [] });
      await store.keys.insertApiKey(newer);
      await store.keys.insertApiKey(older);

      assert.deepEqual(await store.keys.findApiKeyByHash(newer.keyHash), newer);
      assert.deepEqual(await store.keys.findApiKeyByHash(older.keyHash), older);
      assert.equal(await store.keys.findApiKeyByHash(hashKey('nobody')), undefined);
      assert.deepEqual(await store.keys.listApiKeys(), [older, newer]);
      assert.equal((await store.keys.listApiKeys()).length, 2);

      await rejectsAsInvalid(store.keys.insertApiKey(keyRecord(4, { keyHash: older.keyHash })));
      await rejectsAsInvalid(store.keys.insertApiKey(keyRecord(3, { keyHash: hashKey('other') })));
      assert.equal((await store.keys.listApiKeys()).length, 2);
    });

    it('revokeApiKey is true once, then false; unknown ids are false; revoked keys still count', async (t) => {
      const store = await openTestStore(backend, t);
      const key = keyRecord(1);
      await store.keys.insertApiKey(key);
      const at = new Date('2025-06-07T08:09:10.011Z');

      assert.equal(await store.keys.revokeApiKey(key.id, at), true);
      assert.equal(await store.keys.revokeApiKey(key.id, new Date('2026-01-01T00:00:00.000Z')), false);
      assert.equal(await store.keys.revokeApiKey('key_unknown', at), false);
      assert.deepEqual(await store.keys.findApiKeyByHash(key.keyHash), { ...key, revokedAt: at });
      assert.equal((await store.keys.listApiKeys()).length, 1);
    });

    it('touchApiKey records the time of last use', async (t) => {
      const store = await openTestStore(backend, t);
      const key = keyRecord(2);
      await store.keys.insertApiKey(key);
      const first = new Date('2025-01-01T00:00:00.999Z');
      const second = new Date('2025-01-01T00:00:01.000Z');

      await store.keys.touchApiKey(key.id, first);
      assert.deepEqual((await store.keys.findApiKeyByHash(key.keyHash))?.lastUsedAt, first);
      await store.keys.touchApiKey(key.id, second);
      assert.deepEqual(await store.keys.listApiKeys(), [{ ...key, lastUsedAt: second }]);
      await store.keys.touchApiKey('key_unknown', second);
      assert.equal((await store.keys.listApiKeys()).length, 1);
    });

    it('insertFirstApiKey stores a key only while there is none, also when several stores race', async (t) => {
      const db = await createTestDatabase(backend, t);
      const stores = await Promise.all([1, 2, 3, 4].map(() => db.open()));
      const won = await Promise.all(stores.map((s, i) => s.keys.insertFirstApiKey(keyRecord(20 + i))));
      assert.equal(won.filter(Boolean).length, 1, 'exactly one store inserted');
      assert.equal((await stores[0]!.keys.listApiKeys()).length, 1);
      assert.equal(await stores[1]!.keys.insertFirstApiKey(keyRecord(30)), false);
    });

    it('changesSince sees every write of every member that writes entries, and nothing else', async (t) => {
      const store = await openTestStore(backend, t);
      await store.changes.addItems([item(1n), item(2n)]);
      for (const name of Object.keys(WRITES_SEEN) as (keyof Changes)[]) {
        const before = await store.entries.readVersion();
        const eventsBefore = await store.events.head();
        const written = await WRITES_SEEN[name](store);
        const { version, items, removed, complete, eventsHead } = await store.entries.changesSince(before);
        assert.ok(version > before, `${name} moved the store version`);
        assert.equal(eventsHead - eventsBefore, written.items.length + written.removed.length, `${name}: one event per entry written, read with the list`);
        assert.deepEqual({ items, removed }, written, `${name}: changesSince returns what it wrote`);
        assert.equal(complete, false, `${name}: only what changed`);
      }
      const before = await store.entries.readVersion();
      const eventsHead = await store.events.head();
      await store.keys.insertApiKey(keyRecord(3));
      await store.keys.touchApiKey('key_3', new Date());
      await store.maintenance.purgeIdempotencyRecords(new Date());
      await store.maintenance.purgeHistory(new Date());
      assert.deepEqual(await store.entries.changesSince(before), { version: before, items: [], removed: [], complete: false, eventsHead }, 'writes of other things move nothing');
    });

    it('every connection that writes commits durably: WAL with synchronous=FULL, or synchronous_commit=on', async (t) => {
      const store = await openTestStore(backend, t);
      const reported = await store.maintenance.durability();
      if (backend === 'sqlite') {
        // The event loop's connection (creations, keys, housekeeping) and the writer thread's (changes of quantity).
        assert.deepEqual(reported, [
          { connection: 'main', settings: { journal_mode: 'wal', synchronous: 'full' } },
          { connection: 'writer thread', settings: { journal_mode: 'wal', synchronous: 'full' } },
        ]);
      } else {
        assert.deepEqual(reported, [{ connection: 'pool', settings: { synchronous_commit: 'on' } }]);
      }
    });

    it('after close every member rejects with StoreUnavailableError; close is idempotent', async (t) => {
      const store = await openTestStore(backend, t);
      await store.close();
      for (const [port, calls] of Object.entries(EVERY_CALL)) {
        for (const [name, call] of Object.entries(calls as Record<string, (s: Store) => Promise<unknown>>)) {
          await assert.rejects(call(store), { name: 'StoreUnavailableError', message: /closed/ }, `${port}.${name}`);
        }
      }
      await store.close();
    });

    it('reopening the same database keeps the data and does not re-run migrations', async (t) => {
      const db = await createTestDatabase(backend, t);
      const first = await db.open();
      await first.changes.addItems([item(INT64_MAX, 8, 'pending')]);
      await first.keys.insertApiKey(keyRecord(5));
      await first.close();

      const second = await db.open();
      assert.deepEqual(await second.entries.listInventory(), [item(INT64_MAX, 8, 'pending')]);
      assert.deepEqual(await second.keys.listApiKeys(), [keyRecord(5)]);
      assert.deepEqual(await db.migrationVersions(), MIGRATION_VERSIONS[backend]);
      await second.close();

      // The way the server and the CLI open it: from DATABASE_URL alone.
      const fromUrl = await openStore(db.databaseUrl);
      try {
        assert.equal(fromUrl.backend, backend);
        assert.deepEqual(await fromUrl.entries.listInventory(), [item(INT64_MAX, 8, 'pending')]);
      } finally {
        await fromUrl.close();
      }
      assert.deepEqual(await db.migrationVersions(), MIGRATION_VERSIONS[backend]);
    });

    it('stores opened at once on a fresh database all work and migrate exactly once', async (t) => {
      const db = await createTestDatabase(backend, t);
      const stores = await Promise.all(Array.from({ length: 5 }, () => db.open()));
      await Promise.all(stores.map((s) => s.maintenance.ping()));
      assert.deepEqual(await db.migrationVersions(), MIGRATION_VERSIONS[backend]);
    });

    it('two stores on one database: one addItems wins a race, a revocation is seen at once (decisions 2.6)', async (t) => {
      const db = await createTestDatabase(backend, t);
      const [a, b] = [await db.open(), await db.open()];

      const results = await Promise.allSettled([a.changes.addItems([item(7n, 1)]), b.changes.addItems([item(7n, 2)])]);
      assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
      const [lost] = results.filter((r) => r.status === 'rejected');
      assert.ok(lost?.reason instanceof DuplicatePetError && lost.reason.petId === 7n);
      assert.equal((await b.entries.listInventory()).length, 1);

      const key = keyRecord(6);
      await a.keys.insertApiKey(key);
      const at = new Date('2025-03-04T05:06:07.089Z');
      assert.equal(await a.keys.revokeApiKey(key.id, at), true);
      assert.deepEqual((await b.keys.findApiKeyByHash(key.keyHash))?.revokedAt, at);
      assert.equal(await b.keys.revokeApiKey(key.id, at), false);

      // A retirement through one store is a removal in the other's changesSince; racing retirements retire once.
      const before = await b.entries.readVersion();
      const retired = await Promise.all([a.changes.retireEntry(7n, { force: true, at }), b.changes.retireEntry(7n, { force: true, at })]);
      assert.deepEqual(retired.map((r) => r.kind).sort(), ['not_found', 'retired']);
      assert.deepEqual(await b.entries.changesSince(before), { version: await a.entries.readVersion(), items: [], removed: [7n], complete: false, eventsHead: await a.events.head() });
    });

    if (backend === 'postgres') postgresOnly();
  });
}

function postgresOnly(): void {
  it('refuses a URL that sets options= (it would drop synchronous_commit) and unsafe schema names', async () => {
    await assert.rejects(openPostgresStore(`${TEST_DATABASE_URL}?options=-c%20synchronous_commit%3Doff`), /must not set options=/);
    await assert.rejects(openPostgresStore(TEST_DATABASE_URL, { schema: 'x"; DROP SCHEMA public; --' }), /schema must match/);
    await assert.rejects(openPostgresStore(TEST_DATABASE_URL, { schema: 'Upper' }), /schema must match/);
  });

  it('parses int8 as bigint for its own pool only, leaving the global pg parser alone', async (t) => {
    await openTestStore('postgres', t);
    const globalParser = pg.types.getTypeParser(pg.types.builtins.INT8) as (text: string) => unknown;
    assert.equal(globalParser('9007199254740993'), '9007199254740993');
  });

  it('sets its session options on every connection, even for a role whose defaults say otherwise', async (t) => {
    const [{ allowed } = { allowed: false }] = await adminQuery<{ allowed: boolean }>(
      'SELECT rolsuper OR rolcreaterole AS allowed FROM pg_roles WHERE rolname = current_user',
    );
    if (!allowed) {
      // As every test that needs something of the machine: skipped with its reason, but under CI=true it must run, so it fails.
      assert.notEqual(process.env.CI, 'true', 'CI=true but the TEST_DATABASE_URL user cannot create roles (CREATEROLE or superuser)');
      return t.skip('the TEST_DATABASE_URL user cannot create roles');
    }
    const db = await createTestDatabase('postgres', t);
    const schema = pg.escapeIdentifier(db.location);
    // A role of its own with synchronous_commit off by default: only the store's own options can turn it on (decisions 5.2).
    const role = `${db.location}_role`;
    const password = randomBytes(12).toString('hex');
    await adminQuery(`
      CREATE ROLE ${role} LOGIN PASSWORD '${password}';
      ALTER ROLE ${role} SET synchronous_commit = off;
      DO $$ BEGIN EXECUTE format('GRANT CREATE ON DATABASE %I TO ${role}', current_database()); END $$;
    `);
    t.after(() => adminQuery(`DROP OWNED BY ${role}; DROP ROLE ${role}`));
    const asRole = new URL(TEST_DATABASE_URL);
    asRole.username = role;
    asRole.password = password;
    const store = await db.open({ url: asRole.toString() });

    // A trigger reports the settings in force in the store's own session, which nothing outside it can observe.
    await adminQuery(`
      CREATE TABLE ${schema}.seen (settings text);
      GRANT INSERT ON ${schema}.seen TO ${role};
      CREATE FUNCTION ${schema}.record_settings() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
        INSERT INTO ${schema}.seen VALUES (concat_ws(' ', current_setting('synchronous_commit'), current_setting('search_path'),
          current_setting('statement_timeout'), current_setting('idle_in_transaction_session_timeout'), current_setting('application_name')));
        RETURN NEW;
      END $$;
      CREATE TRIGGER record_settings AFTER INSERT ON ${schema}.inventory FOR EACH ROW EXECUTE FUNCTION ${schema}.record_settings();
    `);
    await store.changes.addItems([item(1n)]);
    assert.deepEqual(await adminQuery(`SELECT settings FROM ${schema}.seen`), [
      { settings: `on ${db.location} 5s 10s ${APPLICATION_NAME}` },
    ]);
    assert.deepEqual(await adminQuery(`SELECT pet_id::text AS id FROM ${schema}.inventory`), [{ id: '1' }], 'the row is in the test schema');
  });

  it('a statement stuck behind a lock is cancelled by statement_timeout and answered as unavailable', async (t) => {
    // Registered first, so the lock is gone before the schema is dropped.
    const locker = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await locker.connect();
    t.after(() => locker.end());
    const db = await createTestDatabase('postgres', t);
    const statementTimeoutMs = 300;
    // The call's own deadline far beyond statement_timeout: on a loaded machine a stall of the event loop past the
    // deadline would let our timer, not the server's cancel, end the wait, and the server's side is what this tests.
    const store = await db.open({ statementTimeoutMs, timeoutMs: 30_000 });
    await store.changes.addItems([item(1n)]);

    await locker.query(`BEGIN; LOCK TABLE ${pg.escapeIdentifier(db.location)}.inventory IN ACCESS EXCLUSIVE MODE`);
    try {
      const { ms, error } = await timeRejection(store.entries.listInventory());
      assert.ok(error instanceof StoreUnavailableError, `answered as unavailable: ${String(error)}`);
      assert.equal((error.cause as { code?: string }).code, '57014', `cancelled by the server, not by a client-side timeout: ${causes(error)}`);
      assert.ok(ms >= statementTimeoutMs - 50, `cancelled after ${ms} ms, before statement_timeout`);
    } finally {
      await locker.query('ROLLBACK');
    }
    assert.deepEqual(await store.entries.listInventory(), [item(1n)]);
  });

  it('a server that never answers, or answers the handshake and then falls silent, is unavailable within the timeouts', async (t) => {
    const connectionTimeoutMs = 500;
    const statementTimeoutMs = 300;
    const options = { connectionTimeoutMs, statementTimeoutMs };

    // Which timeout gave up is in the cause; the deadlines only end a wait that would never end.
    const mute = await timeRejection(withDeadline(openPostgresStore(await silentServer(t, 'mute'), options), LIVENESS_MS, 'connecting never gave up'));
    assert.match(causes(mute.error), /connection timeout/);
    assert.ok(mute.ms >= connectionTimeoutMs - 50, `connect gave up after ${mute.ms} ms, before its timeout`);

    const readTimeoutMs = statementTimeoutMs + QUERY_TIMEOUT_GRACE_MS;
    const silent = await timeRejection(withDeadline(openPostgresStore(await silentServer(t, 'silent after startup'), options), LIVENESS_MS, 'the first query never gave up'));
    assert.match(String((silent.error.cause as Error).message), /Query read timeout/);
    assert.ok(silent.ms >= readTimeoutMs - 50, `first query gave up after ${silent.ms} ms, before its read timeout`);
  });

  it('answers StoreUnavailableError at once while the database is down, and the same store recovers when it is back', async (t) => {
    const target = new URL(TEST_DATABASE_URL);
    const proxy = new TcpProxy({ host: target.hostname || '127.0.0.1', port: Number(target.port || 5432) });
    await proxy.start();
    t.after(() => proxy.cut());
    const viaProxy = new URL(TEST_DATABASE_URL);
    viaProxy.hostname = '127.0.0.1';
    viaProxy.port = String(proxy.port);

    const db = await createTestDatabase('postgres', t);
    const store = await db.open({ url: viaProxy.toString() });
    await store.changes.addItems([item(INT64_MAX, 2)]);
    await Promise.all([store.maintenance.ping(), store.maintenance.ping(), store.maintenance.ping()]); // several idle pooled connections to lose

    // Every connection dropped, the port closed: idle connections fail inside the pool (must not crash the process).
    await proxy.cut();
    // At once: from the refusal or the dropped connection, never after a timeout.
    for (const call of [() => store.entries.listInventory(), () => setQuantity(store, INT64_MAX, 3), () => store.changes.addItems([item(1n)])]) {
      const { error } = await timeRejection(withDeadline<unknown>(call(), LIVENESS_MS, 'no answer while the database is down'));
      assert.match(causes(error), /ECONNREFUSED|Connection terminated unexpectedly/);
      assert.doesNotMatch(causes(error), /timeout/i, `not the ${CONNECTION_TIMEOUT_MS} ms connection timeout`);
    }
    await assert.rejects(openPostgresStore(viaProxy.toString()), StoreUnavailableError);

    // Ended early (an uncaught error fails the test at once): listening again after the cleanup would hang the run.
    t.signal.throwIfAborted();
    await proxy.restore();
    const recovery = await timeRecovery(store);
    t.diagnostic(`postgres store answered again ${recovery} ms after the database came back (same store, no reopen)`);
    assert.deepEqual(await store.entries.listInventory(), [item(INT64_MAX, 2)], 'nothing was written while the database was down');
    assert.deepEqual(await setQuantity(store, INT64_MAX, 4), item(INT64_MAX, 4));
  });
}

/** How long the call took to reject, and the StoreUnavailableError it rejected with. */
async function timeRejection(call: Promise<unknown>): Promise<{ ms: number; error: StoreUnavailableError }> {
  const started = performance.now();
  try {
    await call;
  } catch (error) {
    assert.ok(error instanceof StoreUnavailableError, `StoreUnavailableError expected, got ${String(error)}`);
    return { ms: Math.round(performance.now() - started), error };
  }
  assert.fail('expected a rejection');
}

/** Milliseconds until ping succeeds again; any failure meanwhile must be StoreUnavailableError. Gives up after LIVENESS_MS. */
async function timeRecovery(store: Store): Promise<number> {
  const started = performance.now();
  for (;;) {
    try {
      await store.maintenance.ping();
      return Math.round(performance.now() - started);
    } catch (err) {
      assert.ok(err instanceof StoreUnavailableError, String(err));
      if (performance.now() - started > LIVENESS_MS) assert.fail(`the store did not answer again within ${LIVENESS_MS} ms`);
      await sleep(20);
    }
  }
}

/** The messages of an error and of its causes, outermost first. */
function causes(error: unknown): string {
  const messages: string[] = [];
  for (let at = error; at instanceof Error; at = at.cause) messages.push(at.message);
  return messages.join(' <- ');
}

/** AuthenticationOk then ReadyForQuery: all a client needs to consider its session started. */
const HANDSHAKE_DONE = Buffer.from([0x52, 0, 0, 0, 8, 0, 0, 0, 0, 0x5a, 0, 0, 0, 5, 0x49]);

/** A URL to a local server that accepts connections and never answers, or answers the startup and then nothing. */
async function silentServer(t: TestContext, behaviour: 'mute' | 'silent after startup'): Promise<string> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    if (behaviour === 'silent after startup') socket.once('data', () => socket.write(HANDSHAKE_DONE));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    for (const socket of sockets) socket.destroy();
    server.close();
  });
  // sslmode=disable: the startup message must be the first thing sent, whatever PGSSLMODE says.
  return `postgres://silent@127.0.0.1:${(server.address() as AddressInfo).port}/test?sslmode=disable`;
}
