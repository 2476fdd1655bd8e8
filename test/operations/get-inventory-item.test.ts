import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { BACKENDS, backendSkip } from '../support/backends.js';
import { assertError, buildTestApp } from '../support/app.js';
import { getItem, patch } from '../support/requests.js';
import { INT64_MAX_ID, PET_1_AND_INT64_MAX } from '../support/pets.js';


for (const backend of BACKENDS) {
  describe(`integrity on ${backend}`, { skip: await backendSkip(backend) }, () => {
    describe('getInventoryItem: GET /v1/inventory/{petId}', () => {
      test('200 returns the entry with a strong ETag; If-None-Match with it answers 304', async (t) => {
        const api = await buildTestApp(t, { backend, items: PET_1_AND_INT64_MAX });
        const res = await getItem(api, INT64_MAX_ID);
        assert.equal(res.status, 200);
        assert.equal(res.text, `{"petId":${INT64_MAX_ID},"quantity":0,"status":"pending","reserved":0,"available":0}`);
        assert.match(String(res.headers.etag), /^"[^"]+"$/);
        const again = await getItem(api, INT64_MAX_ID, { 'if-none-match': String(res.headers.etag) });
        assert.equal(again.status, 304);
        assert.equal(again.text, '');
        await patch(api, INT64_MAX_ID, { quantity: 1 });
        assert.equal((await getItem(api, INT64_MAX_ID, { 'if-none-match': String(res.headers.etag) })).status, 200, 'changed: 200 again');
      });

      test('404 not_found for a pet with no entry; 400 invalid_pet_id for a bad id; 401 without a key', async (t) => {
        const api = await buildTestApp(t, { backend, items: PET_1_AND_INT64_MAX });
        assertError(await getItem(api, '2'), 404, 'not_found');
        assertError(await getItem(api, '01'), 400, 'invalid_pet_id');
        assertError(await api.request({ method: 'GET', url: '/v1/inventory/1' }), 401, 'unauthorized');
      });
    });
  });
}
