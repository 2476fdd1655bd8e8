import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { InventoryItem } from '../../src/schemas/inventory.js';
import { BACKENDS, backendSkip } from '../support/backends.js';
import { assertError, buildTestApp, makeKey, type TestApp, type TestResponse } from '../support/app.js';
import { itemOf } from '../support/store.js';

const INT64_MAX = '9223372036854775807';
const PETS: InventoryItem[] = [
  { petId: 1n, quantity: 10, status: 'available' },
  { petId: BigInt(INT64_MAX), quantity: 0, status: 'pending' },
];

function patch(api: TestApp, petId: string, body: object, headers: Record<string, string> = {}, key = api.keys.write): Promise<TestResponse> {
  return api.request({ method: 'PATCH', url: `/v1/inventory/${petId}`, key, headers: { 'content-type': 'application/json', ...headers }, body });
}

function history(api: TestApp, petId: string, query = ''): Promise<TestResponse> {
  return api.request({ method: 'GET', url: `/v1/inventory/${petId}/history${query}`, key: api.keys.read });
}

interface HistoryJson {
  items: { petId: number; previousQuantity: number; quantity: number; at: string; keyId: string; keyName: string; requestId: string; reason: string | null }[];
  nextCursor: string | null;
}

for (const backend of BACKENDS) {
  describe(`integrity on ${backend}`, { skip: await backendSkip(backend) }, () => {
    describe('idempotent PATCH (Idempotency-Key)', () => {
      test('a retry with the same key and body gets the same status and body, Idempotent-Replayed: true, and applies once', async (t) => {
        const api = await buildTestApp(t, { backend, items: PETS });
        const first = await patch(api, INT64_MAX, { quantity: 7, reason: 'received' }, { 'idempotency-key': 'order-1' });
        assert.equal(first.status, 200);
        assert.equal(first.headers['idempotent-replayed'], undefined);
        await patch(api, INT64_MAX, { quantity: 8 });
        // Key order and spacing do not make another request.
        const retry = await patch(api, INT64_MAX, { reason: 'received', quantity: 7 }, { 'idempotency-key': 'order-1' });
        assert.equal(retry.status, 200);
        assert.equal(retry.text, first.text);
        assert.equal(retry.headers.etag, first.headers.etag);
        assert.equal(retry.headers['idempotent-replayed'], 'true');
        assert.equal((await itemOf(api.store, BigInt(INT64_MAX)))?.quantity, 8, 'the replay changed nothing');
        assert.equal((await history(api, INT64_MAX)).json<HistoryJson>().items.length, 2);
      });

      test('error outcomes are replayed as well: 404 stays 404 for that key', async (t) => {
        const api = await buildTestApp(t, { backend, items: PETS });
        assertError(await patch(api, '3', { quantity: 1 }, { 'idempotency-key': 'k' }), 404, 'not_found');
        await api.store.changes.addItems([{ petId: 3n, quantity: 0, status: 'sold' }]);
        const retry = await patch(api, '3', { quantity: 1 }, { 'idempotency-key': 'k' });
        assertError(retry, 404, 'not_found');
        assert.equal(retry.headers['idempotent-replayed'], 'true');
      });

      test('422 idempotency_key_reused for the same key with another body or another pet; 400 invalid_parameter for a malformed key', async (t) => {
        const api = await buildTestApp(t, { backend, items: PETS });
        assert.equal((await patch(api, '1', { quantity: 1 }, { 'idempotency-key': '"abc"' })).status, 200);
        assertError(await patch(api, '1', { quantity: 2 }, { 'idempotency-key': 'abc' }), 422, 'idempotency_key_reused');
        assertError(await patch(api, INT64_MAX, { quantity: 1 }, { 'idempotency-key': 'abc' }), 422, 'idempotency_key_reused');
        assert.equal((await itemOf(api.store, 1n))?.quantity, 1);
        assertError(await patch(api, '1', { quantity: 2 }, { 'idempotency-key': 'x'.repeat(256) }), 400, 'invalid_parameter');
        assertError(await patch(api, '1', { quantity: 2 }, { 'idempotency-key': 'caf\u00e9' }), 400, 'invalid_parameter');
      });

      test('keys are per API key: the same Idempotency-Key from another key is another request', async (t) => {
        const api = await buildTestApp(t, { backend, items: PETS });
        const other = makeKey(api.store, api.config.environment, ['inventory:write']);
        assert.equal((await patch(api, '1', { quantity: 4 }, { 'idempotency-key': 'shared' })).status, 200);
        const res = await patch(api, '1', { quantity: 5 }, { 'idempotency-key': 'shared' }, await other);
        assert.equal(res.status, 200);
        assert.equal(res.headers['idempotent-replayed'], undefined);
      });

      test('concurrent requests with one key execute once', async (t) => {
        const api = await buildTestApp(t, { backend, items: PETS, transport: 'http' });
        const answers = await Promise.all(Array.from({ length: 10 }, () => patch(api, '1', { quantity: 33 }, { 'idempotency-key': 'burst' })));
        assert.deepEqual(new Set(answers.map((a) => `${a.status} ${a.text}`)).size, 1);
        assert.equal(answers.filter((a) => a.headers['idempotent-replayed'] === 'true').length, 9);
        assert.equal((await history(api, '1')).json<HistoryJson>().items.length, 1);
      });
    });
  });
}
