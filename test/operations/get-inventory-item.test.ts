import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { InventoryItem } from '../../src/schemas/inventory.js';
import { BACKENDS, backendSkip } from '../support/backends.js';
import { assertError, buildTestApp, type TestApp, type TestResponse } from '../support/app.js';

const INT64_MAX = '9223372036854775807';
const PETS: InventoryItem[] = [
  { petId: 1n, quantity: 10, status: 'available' },
  { petId: BigInt(INT64_MAX), quantity: 0, status: 'pending' },
];

function patch(api: TestApp, petId: string, body: object, headers: Record<string, string> = {}, key = api.keys.write): Promise<TestResponse> {
  return api.request({ method: 'PATCH', url: `/v1/inventory/${petId}`, key, headers: { 'content-type': 'application/json', ...headers }, body });
}

function getItem(api: TestApp, petId: string, headers: Record<string, string> = {}): Promise<TestResponse> {
  return api.request({ method: 'GET', url: `/v1/inventory/${petId}`, key: api.keys.read, headers });
}

for (const backend of BACKENDS) {
  describe(`integrity on ${backend}`, { skip: await backendSkip(backend) }, () => {
    describe('getInventoryItem: GET /v1/inventory/{petId}', () => {
      test('200 returns the entry with a strong ETag; If-None-Match with it answers 304', async (t) => {
        const api = await buildTestApp(t, { backend, items: PETS });
        const res = await getItem(api, INT64_MAX);
        assert.equal(res.status, 200);
        assert.equal(res.text, `{"petId":${INT64_MAX},"quantity":0,"status":"pending"}`);
        assert.match(String(res.headers.etag), /^"[^"]+"$/);
        const again = await getItem(api, INT64_MAX, { 'if-none-match': String(res.headers.etag) });
        assert.equal(again.status, 304);
        assert.equal(again.text, '');
        await patch(api, INT64_MAX, { quantity: 1 });
        assert.equal((await getItem(api, INT64_MAX, { 'if-none-match': String(res.headers.etag) })).status, 200, 'changed: 200 again');
      });

      test('404 not_found for a pet with no entry; 400 invalid_pet_id for a bad id; 401 without a key', async (t) => {
        const api = await buildTestApp(t, { backend, items: PETS });
        assertError(await getItem(api, '2'), 404, 'not_found');
        assertError(await getItem(api, '01'), 400, 'invalid_pet_id');
        assertError(await api.request({ method: 'GET', url: '/v1/inventory/1' }), 401, 'unauthorized');
      });
    });
  });
}
