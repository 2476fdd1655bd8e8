import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { describe, test } from 'node:test';
import { createInventoryClient, InventoryApiError, type InventoryClientOptions, type InventoryItem } from '@petstore/inventory-client';
import { DOCUMENT_PATH, generate, OUTPUT_PATH } from '../scripts/generate.mjs';
import { StoreUnavailableError } from '../../../src/errors.js';
import type { Store } from '../../../src/store/store.js';
import { BACKENDS, backendSkip } from '../../../test/support/backends.js';
import { buildTestApp, makeKey, type TestApp } from '../../../test/support/app.js';

// The built package (dist/), as a user installs it: `npm test` builds it first (pretest).

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const SAFE_MAX = 2n ** 53n - 1n;
const ABOVE_SAFE = 2n ** 53n + 1n; // 9007199254740993: the first id a double cannot hold

const PETS: InventoryItem[] = [
  { petId: INT64_MIN, quantity: 1, status: 'sold' },
  { petId: 1n, quantity: 12, status: 'available' },
  { petId: SAFE_MAX, quantity: 3, status: 'pending' },
  { petId: ABOVE_SAFE, quantity: 7, status: 'available' },
  { petId: INT64_MAX, quantity: 2147483647, status: 'available' },
];

/** A sleep that records what it was asked to wait and returns at once, so retry tests take no time. */
/** An entry as the service answers it with nothing held: reserved 0, all of it available. */
function unheld(item: InventoryItem): InventoryItem {
  return { ...item, reserved: 0, available: item.quantity };
}

function recordedSleep(): { sleeps: number[]; sleep: (ms: number) => Promise<void> } {
  const sleeps: number[] = [];
  return { sleeps, sleep: (ms) => (sleeps.push(ms), Promise.resolve()) };
}

/** A fetch whose first request reaches the service and is applied, its answer then lost to the network; `attempts()` counts the requests. */
function firstAnswerLost(): { fetch: typeof fetch; attempts: () => number } {
  let attempts = 0;
  return {
    fetch: async (request, init) => {
      const response = await fetch(request, init);
      if (++attempts > 1) return response;
      await response.arrayBuffer();
      throw new TypeError('fetch failed (test: connection reset before the answer arrived)');
    },
    attempts: () => attempts,
  };
}

function clientFor(api: TestApp, options: Partial<InventoryClientOptions> = {}) {
  return createInventoryClient({ baseUrl: `${api.baseUrl}/v1`, apiKey: api.keys.write, ...options });
}

/** The InventoryApiError `promise` rejects with, after checking its status and code. */
async function apiError(promise: Promise<unknown>, status: number, code: string): Promise<InventoryApiError> {
  const error = await promise.then(
    () => assert.fail(`expected InventoryApiError ${status} ${code}, got a success`),
    (e: unknown) => e,
  );
  assert.ok(error instanceof InventoryApiError, `expected InventoryApiError, got ${String(error)}`);
  assert.ok(error instanceof Error);
  assert.equal(error.status, status, error.message);
  assert.equal(error.code, code, error.message);
  assert.equal(typeof error.message, 'string');
  return error;
}

/** The real store, except that the first `failures` applyChange calls fail as an unreachable store (the service answers 503). */
function storeFailingFirst(failures: number): { wrap: (store: Store) => Store; calls: () => number } {
  let calls = 0;
  const wrap = (store: Store): Store => ({
    ...store,
    close: () => store.close(),
    changes: {
      ...store.changes,
      async applyChange(change) {
        calls++;
        if (calls <= failures) throw new StoreUnavailableError('store unreachable (test)');
        return store.changes.applyChange(change);
      },
    },
  });
  return { wrap, calls: () => calls };
}

for (const backend of BACKENDS) {
  const skip = await backendSkip(backend);
  describe(`typed client (@petstore/inventory-client) on ${backend}`, { skip }, () => {
    test('listInventory returns every petId exactly as a bigint: 2^53-1, 2^53+1, -2^63, 2^63-1', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PETS });
      const items = await clientFor(api, { apiKey: api.keys.read }).listInventory();
      assert.deepEqual(items, [...PETS].sort((a, b) => (a.petId < b.petId ? -1 : 1)).map(unheld));
      for (const item of items) {
        assert.equal(typeof item.petId, 'bigint');
        assert.equal(typeof item.quantity, 'number');
      }
    });

    test('listInventoryIfChanged: the list and its ETag; with that ETag changed: false (a 304) until a change, then the new list', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PETS });
      const client = clientFor(api, { apiKey: api.keys.read });
      const first = await client.listInventoryIfChanged();
      assert.ok(first.changed);
      assert.deepEqual(first.items, await client.listInventory(), 'the same list as listInventory, bigints included');
      assert.match(first.etag, /^"[^"]+"$/);
      assert.deepEqual(await client.listInventoryIfChanged(first.etag), { changed: false, etag: first.etag });
      await clientFor(api).updateInventory(ABOVE_SAFE, { quantity: 8 });
      const next = await client.listInventoryIfChanged(first.etag);
      assert.ok(next.changed);
      assert.notEqual(next.etag, first.etag);
      assert.deepEqual(next.items.find((i) => i.petId === ABOVE_SAFE), unheld({ petId: ABOVE_SAFE, quantity: 8, status: 'available' }));
      assert.deepEqual(await client.listInventoryIfChanged(next.etag), { changed: false, etag: next.etag });
      await apiError(clientFor(api, { apiKey: 'inv_live_not-a-key' }).listInventoryIfChanged(next.etag), 401, 'unauthorized');
    });

    test('getCallingKey describes the key the client calls with: read-only, or with inventory:write', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http' });
      const records = await api.store.keys.listApiKeys();
      for (const [key, scopes] of [[api.keys.read, ['inventory:read']], [api.keys.write, ['inventory:write']]] as const) {
        const record = records.find((r) => r.name === `test ${scopes[0]}`)!;
        assert.deepEqual(await clientFor(api, { apiKey: key }).getCallingKey(), { id: record.id, name: record.name, scopes, expiresAt: null });
      }
      await apiError(clientFor(api, { apiKey: 'inv_live_not-a-key' }).getCallingKey(), 401, 'unauthorized');
    });

    test('listWebhooks gives every endpoint\'s state to a key with webhooks:manage, never a secret; 403 forbidden to another', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http' });
      const secret = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;
      await api.store.webhookEndpoints.addEndpoint({ id: 'whk_till', url: 'https://till.example/hook', description: null, secret, createdAt: new Date('2026-01-02T03:04:05.000Z') });
      const apiKey = await makeKey(api.store, api.config.environment, ['webhooks:manage']);
      const list = await clientFor(api, { apiKey }).listWebhooks();
      assert.deepEqual(list.items.map((e) => [e.id, e.url, e.enabled, e.backlog, e.createdAt]), [['whk_till', 'https://till.example/hook', true, 0, '2026-01-02T03:04:05.000Z']]);
      assert.equal(list.head, await api.store.events.head());
      assert.ok(!JSON.stringify(list).includes(secret.slice(6)));
      await apiError(clientFor(api, { apiKey: api.keys.read }).listWebhooks(), 403, 'forbidden');
    });

    test('getInventoryItem returns the entry with its ETag, for ids beyond 2^53 and at the int64 bounds', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PETS });
      const client = clientFor(api);
      for (const pet of [PETS[3]!, PETS[0]!, PETS[4]!]) {
        const { item, etag } = await client.getInventoryItem(pet.petId);
        assert.deepEqual(item, unheld(pet));
        assert.match(etag, /^"v\d+"$/);
      }
    });

    test('updateInventory with ifMatch and idempotencyKey applies once; the same key again answers replayed: true', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PETS });
      const client = clientFor(api);
      const { etag } = await client.getInventoryItem(ABOVE_SAFE);
      const idempotencyKey = crypto.randomUUID();
      const first = await client.updateInventory(ABOVE_SAFE, { quantity: 5, reason: 'received' }, { ifMatch: etag, idempotencyKey });
      assert.deepEqual(first.item, unheld({ petId: ABOVE_SAFE, quantity: 5, status: 'available' }));
      assert.equal(first.replayed, false);
      assert.notEqual(first.etag, etag);

      const again = await client.updateInventory(ABOVE_SAFE, { quantity: 5, reason: 'received' }, { ifMatch: etag, idempotencyKey });
      assert.deepEqual(again, { ...first, replayed: true });

      const history = await client.listHistory(ABOVE_SAFE);
      assert.equal(history.items.length, 1, 'applied once');
      assert.deepEqual(
        { petId: history.items[0]!.petId, previousQuantity: history.items[0]!.previousQuantity, quantity: history.items[0]!.quantity, reason: history.items[0]!.reason },
        { petId: ABOVE_SAFE, previousQuantity: 7, quantity: 5, reason: 'received' },
      );
      // Nothing else moved: 2^53 (which a float would have sent instead) has no entry, so it stayed absent.
      assert.deepEqual((await client.listInventory()).map((i) => i.petId), [INT64_MIN, 1n, SAFE_MAX, ABOVE_SAFE, INT64_MAX]);
    });

    test('a stale ETag is InventoryApiError 412 precondition_failed with the current ETag and the request id', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PETS });
      const client = clientFor(api, { headers: { 'x-request-id': 'client-test-412' } });
      const { etag: stale } = await client.getInventoryItem(INT64_MAX);
      const { etag: current } = await client.updateInventory(INT64_MAX, { quantity: 1 });
      const error = await apiError(client.updateInventory(INT64_MAX, { quantity: 2 }, { ifMatch: stale }), 412, 'precondition_failed');
      assert.equal(error.etag, current);
      assert.equal(error.requestId, 'client-test-412');
      assert.equal((await client.getInventoryItem(INT64_MAX)).item.quantity, 1, 'nothing written');
    });

    test('a bad API key is InventoryApiError 401 unauthorized, with a request id', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PETS });
      const error = await apiError(clientFor(api, { apiKey: 'inv_live_not-a-key' }).listInventory(), 401, 'unauthorized');
      assert.match(error.requestId ?? '', /\S/);
      assert.equal(error.etag, undefined);
    });

    test('an unknown pet is InventoryApiError 404 not_found on get, update and history', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PETS });
      const client = clientFor(api);
      // 2^53 is what a double makes of 2^53+1: the client must not have sent it for ABOVE_SAFE above.
      await apiError(client.getInventoryItem(2n ** 53n), 404, 'not_found');
      await apiError(client.updateInventory(2n ** 53n, { quantity: 1 }, { idempotencyKey: crypto.randomUUID() }), 404, 'not_found');
      await apiError(client.listHistory(-1n), 404, 'not_found');
    });

    test('a service error code passes through: 400 invalid_quantity', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PETS });
      await apiError(clientFor(api).updateInventory(1n, { quantity: -1 }), 400, 'invalid_quantity');
    });

    test('listHistory pages with limit and cursor until nextCursor is null, newest first', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PETS });
      const client = clientFor(api);
      for (let q = 100; q < 105; q++) await client.updateInventory(INT64_MIN, { quantity: q });
      const seen: number[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await client.listHistory(INT64_MIN, { limit: 2, ...(cursor ? { cursor } : {}) });
        assert.ok(page.items.length <= 2);
        for (const item of page.items) assert.equal(item.petId, INT64_MIN);
        seen.push(...page.items.map((i) => i.quantity));
        cursor = page.nextCursor ?? undefined;
        pages++;
      } while (cursor !== undefined);
      assert.equal(pages, 3);
      assert.deepEqual(seen, [104, 103, 102, 101, 100]);
    });

    test('a PATCH with an idempotencyKey is retried after 503, waiting its Retry-After, and applied once', async (t) => {
      const failing = storeFailingFirst(1);
      const api = await buildTestApp(t, { backend, transport: 'http', items: PETS, wrapStore: failing.wrap });
      const { sleeps, sleep } = recordedSleep();
      const client = clientFor(api, { retries: { sleep } });
      const result = await client.updateInventory(ABOVE_SAFE, { quantity: 9 }, { idempotencyKey: crypto.randomUUID() });
      assert.deepEqual(result.item, unheld({ petId: ABOVE_SAFE, quantity: 9, status: 'available' }));
      assert.equal(result.replayed, false);
      assert.equal(failing.calls(), 2, 'one 503, one retry');
      assert.deepEqual(sleeps, [1000], 'the service answered Retry-After: 1');
      assert.equal((await client.listHistory(ABOVE_SAFE)).items.length, 1, 'applied once');
    });

    test('a PATCH without an idempotencyKey is not retried after 503: InventoryApiError 503 service_unavailable', async (t) => {
      const failing = storeFailingFirst(1);
      const api = await buildTestApp(t, { backend, transport: 'http', items: PETS, wrapStore: failing.wrap });
      const { sleeps, sleep } = recordedSleep();
      const client = clientFor(api, { retries: { sleep } });
      const error = await apiError(client.updateInventory(ABOVE_SAFE, { quantity: 9 }), 503, 'service_unavailable');
      assert.match(error.requestId ?? '', /\S/);
      assert.equal(failing.calls(), 1);
      assert.deepEqual(sleeps, []);
      assert.equal((await client.getInventoryItem(ABOVE_SAFE)).item.quantity, 7, 'not applied');
    });

    test('an answer lost to the network is retried with the same key: applied once, the retry answers replayed: true', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PETS });
      const lost = firstAnswerLost();
      const { sleeps, sleep } = recordedSleep();
      const client = clientFor(api, { retries: { sleep }, fetch: lost.fetch });
      const result = await client.updateInventory(ABOVE_SAFE, { quantity: 11, reason: 'returned' }, { idempotencyKey: crypto.randomUUID() });
      assert.equal(lost.attempts(), 2);
      assert.equal(sleeps.length, 1);
      assert.equal(result.replayed, true);
      assert.deepEqual(result.item, unheld({ petId: ABOVE_SAFE, quantity: 11, status: 'available' }));
      assert.equal((await client.listHistory(ABOVE_SAFE)).items.length, 1, 'applied once');
    });

    test('adjustInventory moves the count by the delta from what the entry holds; the same key again answers replayed: true', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PETS });
      const client = clientFor(api);
      const idempotencyKey = crypto.randomUUID();
      // Someone else set it after this client last looked: the delta applies to their count.
      await client.updateInventory(ABOVE_SAFE, { quantity: 9 });
      const first = await client.adjustInventory(ABOVE_SAFE, { delta: -2, reason: 'sold' }, { idempotencyKey });
      assert.deepEqual(first.item, unheld({ petId: ABOVE_SAFE, quantity: 7, status: 'available' }));
      assert.equal(first.replayed, false);
      assert.equal(first.etag, (await client.getInventoryItem(ABOVE_SAFE)).etag);
      assert.deepEqual(await client.adjustInventory(ABOVE_SAFE, { delta: -2, reason: 'sold' }, { idempotencyKey }), { ...first, replayed: true });
      const received = await client.adjustInventory(ABOVE_SAFE, { delta: 3 }, { ifMatch: first.etag });
      assert.equal(received.item.quantity, 10);

      const history = (await client.listHistory(ABOVE_SAFE)).items.map((h) => [h.petId, h.previousQuantity, h.quantity, h.reason]);
      assert.deepEqual(history, [[ABOVE_SAFE, 7, 10, null], [ABOVE_SAFE, 9, 7, 'sold'], [ABOVE_SAFE, 7, 9, null]], 'the replay applied nothing');
      // 2^53, which a float would have sent instead, has no entry: it would have been 404.
      assert.deepEqual((await client.listInventory()).map((i) => [i.petId, i.quantity]), PETS.map((p) => [p.petId, p.petId === ABOVE_SAFE ? 10 : p.quantity]).sort((a, b) => (a[0]! < b[0]! ? -1 : 1)));
    });

    test('adjustInventory below 0 is InventoryApiError 409 insufficient_stock naming the count on hand; a stale ETag is 412 first; nothing written', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PETS });
      const client = clientFor(api);
      const { etag: stale } = await client.getInventoryItem(SAFE_MAX);
      const error = await apiError(client.adjustInventory(SAFE_MAX, { delta: -4, reason: 'sold' }, { idempotencyKey: crypto.randomUUID() }), 409, 'insufficient_stock');
      assert.match(error.message, /\b3\b/, `the count on hand: ${error.message}`);
      assert.equal(error.index, undefined, 'no index outside a batch');
      const { etag: current } = await client.adjustInventory(SAFE_MAX, { delta: -3 });
      const precondition = await apiError(client.adjustInventory(SAFE_MAX, { delta: -1 }, { ifMatch: stale }), 412, 'precondition_failed');
      assert.equal(precondition.etag, current);
      await apiError(client.adjustInventory(SAFE_MAX, { delta: 0 }), 400, 'invalid_quantity');
      await apiError(client.adjustInventory(2n ** 53n, { delta: 1 }), 404, 'not_found');
      assert.deepEqual((await client.listHistory(SAFE_MAX)).items.map((h) => [h.previousQuantity, h.quantity]), [[3, 0]], 'only the one that applied');
    });

    test('batchUpdateInventory applies every change, quantities and deltas, with bigint petIds in and out and each version; replayed by its key', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PETS });
      const client = clientFor(api);
      const { etag } = await client.getInventoryItem(ABOVE_SAFE);
      const idempotencyKey = crypto.randomUUID();
      const changes = [
        { petId: INT64_MAX, quantity: 12, reason: 'correction' },
        { petId: ABOVE_SAFE, delta: -3, ifMatch: etag, reason: 'sold' },
        { petId: INT64_MIN, delta: 4 },
      ] as const;
      const result = await client.batchUpdateInventory(changes, { idempotencyKey });
      assert.equal(result.replayed, false);
      assert.deepEqual(
        result.items.map(({ petId, quantity, status }) => ({ petId, quantity, status })),
        [
          { petId: INT64_MAX, quantity: 12, status: 'available' },
          { petId: ABOVE_SAFE, quantity: 4, status: 'available' },
          { petId: INT64_MIN, quantity: 5, status: 'sold' },
        ],
        'in the order sent, each petId exact',
      );
      for (const item of result.items) {
        assert.equal(typeof item.petId, 'bigint');
        assert.equal(`"v${item.version}"`, (await client.getInventoryItem(item.petId)).etag, 'version is the number in the ETag');
      }
      assert.deepEqual(await client.batchUpdateInventory(changes, { idempotencyKey }), { ...result, replayed: true });
      assert.equal((await client.listHistory(ABOVE_SAFE)).items.length, 1, 'applied once');
      assert.equal((await client.getInventoryItem(2n ** 53n).catch((e: unknown) => e)) instanceof InventoryApiError, true, '2^53 still has no entry');
    });

    test('a refused batch is InventoryApiError with the first failing change\'s code and its index; nothing applied', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PETS });
      const client = clientFor(api);
      const stock = await apiError(
        client.batchUpdateInventory([{ petId: 1n, delta: 1 }, { petId: ABOVE_SAFE, delta: -8, reason: 'sold' }, { petId: 2n ** 53n, quantity: 1 }], { idempotencyKey: crypto.randomUUID() }),
        409,
        'insufficient_stock',
      );
      assert.equal(stock.index, 1);
      assert.match(stock.message, /changes\[1\]/);
      const missing = await apiError(client.batchUpdateInventory([{ petId: 1n, delta: 1 }, { petId: 2n ** 53n, quantity: 1 }]), 404, 'not_found');
      assert.equal(missing.index, 1, 'the pet a float would have named instead has no entry');
      const { etag: stale } = await client.getInventoryItem(SAFE_MAX);
      await client.updateInventory(SAFE_MAX, { quantity: 4 });
      const precondition = await apiError(client.batchUpdateInventory([{ petId: SAFE_MAX, delta: -1, ifMatch: stale }]), 412, 'precondition_failed');
      assert.equal(precondition.index, 0);
      const repeated = await apiError(client.batchUpdateInventory([{ petId: 1n, quantity: 1 }, { petId: 1n, quantity: 2 }]), 400, 'invalid_body');
      assert.equal(repeated.index, 1);
      const invalid = await apiError(client.batchUpdateInventory([{ petId: 1n, quantity: 1 }, { petId: INT64_MIN, delta: 0 }]), 400, 'invalid_quantity');
      assert.equal(invalid.index, 1);
      await apiError(client.batchUpdateInventory([]), 400, 'invalid_body');
      assert.deepEqual((await client.listHistory(1n)).items, [], 'nothing applied by a refused batch');
      assert.equal((await client.getInventoryItem(ABOVE_SAFE)).item.quantity, 7);
    });

    test('an adjustment with an idempotencyKey is retried after 503 and applied once; without one it is not retried', async (t) => {
      const failing = storeFailingFirst(1);
      const api = await buildTestApp(t, { backend, transport: 'http', items: PETS, wrapStore: failing.wrap });
      const { sleeps, sleep } = recordedSleep();
      const client = clientFor(api, { retries: { sleep } });
      const result = await client.adjustInventory(ABOVE_SAFE, { delta: -1, reason: 'sold' }, { idempotencyKey: crypto.randomUUID() });
      assert.deepEqual([result.item.quantity, result.replayed], [6, false]);
      assert.equal(failing.calls(), 2, 'one 503, one retry');
      assert.deepEqual(sleeps, [1000], 'the service answered Retry-After: 1');

      const once = storeFailingFirst(1);
      const other = await buildTestApp(t, { backend, transport: 'http', items: PETS, wrapStore: once.wrap });
      const error = await apiError(clientFor(other, { retries: { sleep } }).adjustInventory(ABOVE_SAFE, { delta: -1 }), 503, 'service_unavailable');
      assert.match(error.requestId ?? '', /\S/);
      assert.equal(once.calls(), 1, 'sent once: a second might sell the pet twice');
      assert.equal((await clientFor(other).getInventoryItem(ABOVE_SAFE)).item.quantity, 7, 'not applied');
    });

    test('an adjustment whose answer is lost is retried with the same key: applied once, the retry answers replayed: true', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PETS });
      const lost = firstAnswerLost();
      const { sleep } = recordedSleep();
      const client = clientFor(api, { retries: { sleep }, fetch: lost.fetch });
      const result = await client.adjustInventory(ABOVE_SAFE, { delta: -1, reason: 'sold' }, { idempotencyKey: crypto.randomUUID() });
      assert.deepEqual([lost.attempts(), result.replayed, result.item.quantity], [2, true, 6]);
      assert.equal((await client.listHistory(ABOVE_SAFE)).items.length, 1, 'sold once');
    });
  });
}

describe('typed client (@petstore/inventory-client) without a service', () => {
  const baseUrl = 'http://inventory.invalid/v1';
  const failingFetch = () => {
    const requests: Request[] = [];
    const fetch = (request: Request): Promise<Response> => {
      requests.push(request);
      return Promise.reject(new TypeError('fetch failed (test: connection refused)'));
    };
    return { requests, fetch };
  };

  test('network errors are retried a bounded number of times with growing back-off, then thrown', async () => {
    const { requests, fetch } = failingFetch();
    const { sleeps, sleep } = recordedSleep();
    const client = createInventoryClient({ baseUrl, apiKey: 'k', fetch, retries: { max: 2, baseDelayMs: 100, sleep, random: () => 0 } });
    await assert.rejects(client.listInventory(), (e: unknown) => e instanceof TypeError && !(e instanceof InventoryApiError));
    assert.equal(requests.length, 3, 'the first attempt and 2 retries');
    // Half of 100 ms, then half of 200 ms: doubling back-off, random() = 0 takes the fixed half.
    assert.deepEqual(sleeps, [50, 100]);

    requests.length = 0;
    sleeps.length = 0;
    await assert.rejects(client.updateInventory(ABOVE_SAFE, { quantity: 1 }, { idempotencyKey: 'k-1' }), TypeError);
    assert.equal(requests.length, 3, 'a PATCH with a key is retried too');
    assert.equal(sleeps.length, 2);
  });

  test('a PATCH without an idempotencyKey is sent once, even after a network error', async () => {
    const { requests, fetch } = failingFetch();
    const { sleeps, sleep } = recordedSleep();
    const client = createInventoryClient({ baseUrl, apiKey: 'k', fetch, retries: { sleep } });
    await assert.rejects(client.updateInventory(ABOVE_SAFE, { quantity: 1 }, { ifMatch: '"v1"' }), TypeError);
    assert.equal(requests.length, 1);
    assert.deepEqual(sleeps, []);
  });

  test('jittered back-off stays between half and all of the doubled delay, capped at maxDelayMs', async () => {
    const { requests, fetch } = failingFetch();
    const { sleeps, sleep } = recordedSleep();
    const client = createInventoryClient({ baseUrl, apiKey: 'k', fetch, retries: { max: 5, baseDelayMs: 100, maxDelayMs: 1000, sleep } });
    await assert.rejects(client.listInventory(), TypeError);
    assert.equal(requests.length, 6);
    [100, 200, 400, 800, 1000].forEach((full, i) => assert.ok(sleeps[i]! >= full / 2 && sleeps[i]! <= full, `retry ${i}: ${sleeps[i]} ms`));
  });

  test('a Retry-After longer than maxDelayMs waits maxDelayMs', async () => {
    let calls = 0;
    const { sleeps, sleep } = recordedSleep();
    const client = createInventoryClient({
      baseUrl,
      apiKey: 'k',
      retries: { maxDelayMs: 5000, sleep },
      fetch: () =>
        Promise.resolve(
          ++calls === 1
            ? Response.json({ code: 'service_unavailable', message: 'busy', status: 503 }, { status: 503, headers: { 'retry-after': '3600' } })
            : new Response(`[{"petId":${INT64_MAX},"quantity":1,"status":"sold"}]`, { headers: { 'content-type': 'application/json' } }),
        ),
    });
    assert.deepEqual(await client.listInventory(), [{ petId: INT64_MAX, quantity: 1, status: 'sold' }]);
    assert.deepEqual(sleeps, [5000]);
  });

  test("a non-JSON error answer (a proxy's HTML 502) is InventoryApiError unexpected_response, not retried", async () => {
    let calls = 0;
    const { sleeps, sleep } = recordedSleep();
    const client = createInventoryClient({
      baseUrl,
      apiKey: 'k',
      retries: { sleep },
      fetch: () => (calls++, Promise.resolve(new Response('<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>', { status: 502, statusText: 'Bad Gateway', headers: { 'content-type': 'text/html' } }))),
    });
    const error = await apiError(client.getInventoryItem(1n), 502, 'unexpected_response');
    assert.match(error.message, /^HTTP 502 Bad Gateway: .*502 Bad Gateway nginx$/);
    assert.equal(error.requestId, undefined);
    assert.equal(calls, 1);
    assert.deepEqual(sleeps, []);
  });

  test('a 200 whose body is not JSON is InventoryApiError unexpected_response', async () => {
    const client = createInventoryClient({ baseUrl, apiKey: 'k', fetch: () => Promise.resolve(new Response('<html>login</html>', { status: 200, headers: { 'x-request-id': 'r-1' } })) });
    const error = await apiError(client.listInventory(), 200, 'unexpected_response');
    assert.equal(error.requestId, 'r-1');
  });

  test('sends petId digit for digit in the path, the body as JSON, the key, headers and User-Agent', async () => {
    const seen: { url: string; method: string; headers: Headers; body: string }[] = [];
    const client = createInventoryClient({
      baseUrl,
      apiKey: 'inv_live_secret',
      userAgent: 'till-2/1.0',
      fetch: async (request) => {
        seen.push({ url: request.url, method: request.method, headers: request.headers, body: await request.text() });
        return new Response(`{"petId":${ABOVE_SAFE},"quantity":5,"status":"available"}`, { headers: { etag: '"v2"', 'idempotent-replayed': 'true' } });
      },
    });
    const result = await client.updateInventory(ABOVE_SAFE, { quantity: 5, reason: 'correction' }, { ifMatch: '"v1"', idempotencyKey: 'key-1' });
    assert.deepEqual(result, { item: { petId: ABOVE_SAFE, quantity: 5, status: 'available' }, etag: '"v2"', replayed: true });
    const [sent] = seen;
    assert.equal(sent?.url, `${baseUrl}/inventory/9007199254740993`);
    assert.equal(sent.method, 'PATCH');
    assert.equal(sent.body, '{"quantity":5,"reason":"correction"}');
    assert.equal(sent.headers.get('authorization'), 'Bearer inv_live_secret');
    assert.equal(sent.headers.get('content-type'), 'application/json');
    assert.equal(sent.headers.get('if-match'), '"v1"');
    assert.equal(sent.headers.get('idempotency-key'), 'key-1');
    assert.equal(sent.headers.get('user-agent'), 'till-2/1.0');

    await client.listHistory(INT64_MIN, { limit: 50, cursor: 'h12' }).catch(() => undefined);
    assert.equal(seen[1]?.url, `${baseUrl}/inventory/-9223372036854775808/history?limit=50&cursor=h12`);
  });

  test('listInventoryIfChanged sends If-None-Match only when given an ETag; a 304 keeps the ETag, a 200 without one is unexpected_response', async () => {
    const sent: (string | null)[] = [];
    let answer = () => new Response(null, { status: 304, headers: { etag: '"s7-br"' } });
    const client = createInventoryClient({
      baseUrl,
      apiKey: 'k',
      fetch: (request) => (sent.push(request.headers.get('if-none-match')), Promise.resolve(answer())),
    });
    assert.deepEqual(await client.listInventoryIfChanged('"s7-br"'), { changed: false, etag: '"s7-br"' });
    answer = () => new Response(`[{"petId":${ABOVE_SAFE},"quantity":1,"status":"sold"}]`, { headers: { etag: '"s8"' } });
    assert.deepEqual(await client.listInventoryIfChanged(), { changed: true, items: [{ petId: ABOVE_SAFE, quantity: 1, status: 'sold' }], etag: '"s8"' });
    assert.deepEqual(sent, ['"s7-br"', null]);
    answer = () => new Response('[]');
    await apiError(client.listInventoryIfChanged('"s8"'), 200, 'unexpected_response');
  });

  test('adjustments and batches are retried after a network error only with an idempotencyKey', async () => {
    const { requests, fetch } = failingFetch();
    const { sleeps, sleep } = recordedSleep();
    const client = createInventoryClient({ baseUrl, apiKey: 'k', fetch, retries: { max: 2, sleep } });
    await assert.rejects(client.adjustInventory(ABOVE_SAFE, { delta: -1 }, { idempotencyKey: 'k-1' }), TypeError);
    await assert.rejects(client.batchUpdateInventory([{ petId: ABOVE_SAFE, delta: -1 }], { idempotencyKey: 'k-2' }), TypeError);
    assert.equal(requests.length, 6, 'each with a key: the first attempt and 2 retries');
    requests.length = 0;
    await assert.rejects(client.adjustInventory(ABOVE_SAFE, { delta: -1 }, { ifMatch: '"v1"' }), TypeError);
    await assert.rejects(client.batchUpdateInventory([{ petId: ABOVE_SAFE, delta: -1 }]), TypeError);
    assert.equal(requests.length, 2, 'without a key: sent once each');
    assert.equal(sleeps.length, 4);
  });

  test('sends an adjustment and a batch as JSON with every petId digit for digit; reads a refusal\'s index', async () => {
    const seen: { url: string; method: string; headers: Headers; body: string }[] = [];
    let answer = (): Response => new Response(`{"petId":${ABOVE_SAFE},"quantity":4,"status":"available"}`, { headers: { etag: '"v3"' } });
    const client = createInventoryClient({
      baseUrl,
      apiKey: 'k',
      fetch: async (request) => {
        seen.push({ url: request.url, method: request.method, headers: request.headers, body: await request.text() });
        return answer();
      },
    });
    assert.deepEqual(await client.adjustInventory(ABOVE_SAFE, { delta: -1, reason: 'damaged' }, { ifMatch: '"v2"', idempotencyKey: 'key-1' }), {
      item: { petId: ABOVE_SAFE, quantity: 4, status: 'available' },
      etag: '"v3"',
      replayed: false,
    });
    assert.deepEqual([seen[0]?.method, seen[0]?.url, seen[0]?.body], ['POST', `${baseUrl}/inventory/9007199254740993/adjustments`, '{"delta":-1,"reason":"damaged"}']);
    assert.deepEqual([seen[0]?.headers.get('if-match'), seen[0]?.headers.get('idempotency-key'), seen[0]?.headers.get('content-type')], ['"v2"', 'key-1', 'application/json']);

    answer = () => new Response(`{"items":[{"petId":${INT64_MIN},"quantity":2,"status":"sold","version":3},{"petId":${ABOVE_SAFE},"quantity":0,"status":"available","version":9}]}`, { headers: { 'idempotent-replayed': 'true' } });
    const batch = await client.batchUpdateInventory([{ petId: INT64_MIN, quantity: 2 }, { petId: ABOVE_SAFE, delta: -4, ifMatch: '"v8"', reason: 'sold' }], { idempotencyKey: 'key-2' });
    assert.deepEqual(batch, {
      items: [
        { petId: INT64_MIN, quantity: 2, status: 'sold', version: 3 },
        { petId: ABOVE_SAFE, quantity: 0, status: 'available', version: 9 },
      ],
      replayed: true,
    });
    assert.deepEqual([seen[1]?.method, seen[1]?.url, seen[1]?.headers.get('idempotency-key')], ['POST', `${baseUrl}/inventory/batch`, 'key-2']);
    assert.equal(seen[1]?.body, '{"changes":[{"petId":-9223372036854775808,"quantity":2},{"petId":9007199254740993,"delta":-4,"ifMatch":"\\"v8\\"","reason":"sold"}]}');

    answer = () => Response.json({ code: 'insufficient_stock', message: 'changes[1]: pet 9007199254740993 has 0 on hand.', status: 409, index: 1 }, { status: 409, headers: { 'x-request-id': 'r-9' } });
    const refused = await apiError(client.batchUpdateInventory([{ petId: 1n, delta: 1 }, { petId: ABOVE_SAFE, delta: -1 }]), 409, 'insufficient_stock');
    assert.deepEqual([refused.index, refused.requestId, refused.message], [1, 'r-9', 'changes[1]: pet 9007199254740993 has 0 on hand.']);
    // An index that is no index is not passed on as one.
    answer = () => Response.json({ code: 'invalid_body', message: 'bad', status: 400, index: '1' }, { status: 400 });
    assert.equal((await apiError(client.batchUpdateInventory([{ petId: 1n, quantity: 1 }]), 400, 'invalid_body')).index, undefined);
  });

  test('a petId that is not a bigint in the int64 range is refused before anything is sent', async () => {
    const { requests, fetch } = failingFetch();
    const client = createInventoryClient({ baseUrl, apiKey: 'k', fetch });
    // What plain JavaScript would pass: the number 9007199254740993, already rounded to ...992.
    await assert.rejects(client.getInventoryItem(Number('9007199254740993') as unknown as bigint), TypeError);
    await assert.rejects(client.updateInventory(INT64_MAX + 1n, { quantity: 1 }), RangeError);
    await assert.rejects(client.adjustInventory(Number('9007199254740993') as unknown as bigint, { delta: 1 }), TypeError);
    // One bad petId anywhere in a batch: none of it is sent.
    await assert.rejects(client.batchUpdateInventory([{ petId: 1n, quantity: 1 }, { petId: Number('9007199254740993') as unknown as bigint, delta: 1 }]), TypeError);
    await assert.rejects(client.batchUpdateInventory([{ petId: INT64_MIN - 1n, quantity: 1 }]), RangeError);
    assert.equal(requests.length, 0);
  });
});

describe('typed client: generated types', () => {
  test('src/generated/openapi.ts is exactly what scripts/generate.mjs makes of openapi.json (no drift: run npm run openapi)', async () => {
    const regenerated = await generate(await readFile(DOCUMENT_PATH, 'utf8'));
    const committed = await readFile(OUTPUT_PATH, 'utf8');
    assert.ok(regenerated === committed, 'clients/typescript/src/generated/openapi.ts differs from openapi.json: run `npm run openapi` at the root');
    assert.match(committed, /petId: bigint;/);
    assert.doesNotMatch(committed, /petId: number;/);
  });
});
