import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { BACKENDS, backendSkip } from '../support/backends.js';
import { assertError, buildTestApp, makeKey } from '../support/app.js';
import { itemOf } from '../support/store.js';
import { history, patch, type HistoryJson } from '../support/requests.js';
import { INT64_MAX_ID, PET_1_AND_INT64_MAX } from '../support/pets.js';


for (const backend of BACKENDS) {
  describe(`integrity on ${backend}`, { skip: await backendSkip(backend) }, () => {
    describe('idempotent PATCH (Idempotency-Key)', () => {
      test('a retry with the same key and body gets the same status and body, Idempotent-Replayed: true, and applies once', async (t) => {
        const api = await buildTestApp(t, { backend, items: PET_1_AND_INT64_MAX });
        const first = await patch(api, INT64_MAX_ID, { quantity: 7, reason: 'received' }, { headers: { 'idempotency-key': 'order-1' } });
        assert.equal(first.status, 200);
        assert.equal(first.headers['idempotent-replayed'], undefined);
        await patch(api, INT64_MAX_ID, { quantity: 8 });
        // Key order and spacing do not make another request.
        const retry = await patch(api, INT64_MAX_ID, { reason: 'received', quantity: 7 }, { headers: { 'idempotency-key': 'order-1' } });
        assert.equal(retry.status, 200);
        assert.equal(retry.text, first.text);
        assert.equal(retry.headers.etag, first.headers.etag);
        assert.equal(retry.headers['idempotent-replayed'], 'true');
        assert.equal((await itemOf(api.store, BigInt(INT64_MAX_ID)))?.quantity, 8, 'the replay changed nothing');
        assert.equal((await history(api, INT64_MAX_ID)).json<HistoryJson>().items.length, 2);
      });

      test('error outcomes are replayed as well: 404 stays 404 for that key', async (t) => {
        const api = await buildTestApp(t, { backend, items: PET_1_AND_INT64_MAX });
        assertError(await patch(api, '3', { quantity: 1 }, { headers: { 'idempotency-key': 'k' } }), 404, 'not_found');
        await api.store.changes.addItems([{ petId: 3n, quantity: 0, status: 'sold' }]);
        const retry = await patch(api, '3', { quantity: 1 }, { headers: { 'idempotency-key': 'k' } });
        assertError(retry, 404, 'not_found');
        assert.equal(retry.headers['idempotent-replayed'], 'true');
      });

      test('422 idempotency_key_reused for the same key with another body or another pet; 400 invalid_parameter for a malformed key', async (t) => {
        const api = await buildTestApp(t, { backend, items: PET_1_AND_INT64_MAX });
        assert.equal((await patch(api, '1', { quantity: 1 }, { headers: { 'idempotency-key': '"abc"' } })).status, 200);
        assertError(await patch(api, '1', { quantity: 2 }, { headers: { 'idempotency-key': 'abc' } }), 422, 'idempotency_key_reused');
        assertError(await patch(api, INT64_MAX_ID, { quantity: 1 }, { headers: { 'idempotency-key': 'abc' } }), 422, 'idempotency_key_reused');
        assert.equal((await itemOf(api.store, 1n))?.quantity, 1);
        assertError(await patch(api, '1', { quantity: 2 }, { headers: { 'idempotency-key': 'x'.repeat(256) } }), 400, 'invalid_parameter');
        assertError(await patch(api, '1', { quantity: 2 }, { headers: { 'idempotency-key': 'caf\u00e9' } }), 400, 'invalid_parameter');
      });

      test('keys are per API key: the same Idempotency-Key from another key is another request', async (t) => {
        const api = await buildTestApp(t, { backend, items: PET_1_AND_INT64_MAX });
        const other = makeKey(api.store, api.config.environment, ['inventory:write']);
        assert.equal((await patch(api, '1', { quantity: 4 }, { headers: { 'idempotency-key': 'shared' } })).status, 200);
        const res = await patch(api, '1', { quantity: 5 }, { headers: { 'idempotency-key': 'shared' }, key: await other });
        assert.equal(res.status, 200);
        assert.equal(res.headers['idempotent-replayed'], undefined);
      });

      test('concurrent requests with one key execute once', async (t) => {
        const api = await buildTestApp(t, { backend, items: PET_1_AND_INT64_MAX, transport: 'http' });
        const answers = await Promise.all(Array.from({ length: 10 }, () => patch(api, '1', { quantity: 33 }, { headers: { 'idempotency-key': 'burst' } })));
        assert.deepEqual(new Set(answers.map((a) => `${a.status} ${a.text}`)).size, 1);
        assert.equal(answers.filter((a) => a.headers['idempotent-replayed'] === 'true').length, 9);
        assert.equal((await history(api, '1')).json<HistoryJson>().items.length, 1);
      });
    });
  });
}
