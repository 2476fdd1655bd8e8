import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { BACKENDS, backendSkip } from '../support/backends.js';
import { assertError, buildTestApp } from '../support/app.js';
import { history, patch, type HistoryJson } from '../support/requests.js';
import { INT64_MAX_ID, PET_1_AND_INT64_MAX } from '../support/pets.js';


for (const backend of BACKENDS) {
  describe(`integrity on ${backend}`, { skip: await backendSkip(backend) }, () => {
    describe('change history: GET /v1/inventory/{petId}/history', () => {
      test('lists changes newest first with key id and name, request id, reason and time; never the key', async (t) => {
        const api = await buildTestApp(t, { backend, items: PET_1_AND_INT64_MAX });
        const before = Date.now();
        await patch(api, '1', { quantity: 12, reason: 'received' }, { headers: { 'x-request-id': 'req-received-1' } });
        await patch(api, '1', { quantity: 11 });
        const res = await history(api, '1');
        assert.equal(res.status, 200);
        const page = res.json<HistoryJson>();
        assert.equal(page.nextCursor, null);
        const [newest, oldest] = page.items;
        assert.deepEqual({ ...oldest, at: undefined, keyId: undefined, requestId: undefined }, {
          petId: 1,
          previousQuantity: 10,
          quantity: 12,
          at: undefined,
          keyId: undefined,
          keyName: 'test inventory:write',
          requestId: undefined,
          reason: 'received',
        });
        assert.equal(oldest!.requestId, 'req-received-1');
        assert.match(oldest!.keyId, /^key_/);
        assert.ok(Date.parse(oldest!.at) >= before - 1000 && /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/.test(oldest!.at));
        assert.deepEqual([newest!.previousQuantity, newest!.quantity, newest!.reason], [12, 11, null]);
        assert.doesNotMatch(res.text, new RegExp(api.keys.write));
      });

      test('pages with limit and cursor; the last page has nextCursor null', async (t) => {
        const api = await buildTestApp(t, { backend, items: PET_1_AND_INT64_MAX });
        for (let q = 1; q <= 5; q++) await patch(api, INT64_MAX_ID, { quantity: q });
        const first = (await history(api, INT64_MAX_ID, '?limit=2')).json<HistoryJson>();
        assert.deepEqual(first.items.map((i) => i.quantity), [5, 4]);
        assert.equal(typeof first.nextCursor, 'string');
        const second = (await history(api, INT64_MAX_ID, `?limit=2&cursor=${first.nextCursor}`)).json<HistoryJson>();
        assert.deepEqual(second.items.map((i) => i.quantity), [3, 2]);
        const third = (await history(api, INT64_MAX_ID, `?limit=2&cursor=${second.nextCursor}`)).json<HistoryJson>();
        assert.deepEqual(third.items.map((i) => i.quantity), [1]);
        assert.equal(third.nextCursor, null);
        assert.match((await history(api, INT64_MAX_ID)).text, new RegExp(`"petId":${INT64_MAX_ID}`), 'exact int64 digits');
      });

      test('400 invalid_parameter for a bad limit or cursor or an unknown parameter; 404 not_found; 401 without a key', async (t) => {
        const api = await buildTestApp(t, { backend, items: PET_1_AND_INT64_MAX });
        // Each message says in words what the parameter accepts, never the schema's pattern.
        const limitMessage = 'Query parameter "limit" must be an integer from 1 to 500.';
        const cursorMessage = 'Query parameter "cursor" must be the nextCursor of the previous page, unchanged.';
        const refusals: [string, string][] = [
          ['?limit=0', limitMessage],
          ['?limit=501', limitMessage],
          ['?limit=2.5', limitMessage],
          ['?limit=ten', limitMessage],
          ['?limit=abc', limitMessage],
          ['?limit=', limitMessage],
          ['?limit=1&limit=2', limitMessage],
          ['?cursor=abc', cursorMessage],
          ['?cursor=h0', cursorMessage],
          ['?cursor=', cursorMessage],
          [`?cursor=h${'1'.repeat(40)}`, cursorMessage],
          ['?page=2', 'Unknown query parameter "page": this operation takes only "limit" and "cursor".'],
        ];
        for (const [query, message] of refusals) {
          assert.equal(assertError(await history(api, '1', query), 400, 'invalid_parameter').message, message, query);
        }
        // Past the int64 row ids: refused, never a 500 from the store's binding.
        for (const cursor of ['h9223372036854775808', 'h9999999999999999999', 'h10000000000000000000']) {
          assert.equal(assertError(await history(api, '1', `?cursor=${cursor}`), 400, 'invalid_parameter').message, cursorMessage);
        }
        assert.equal((await history(api, '1', '?cursor=h9223372036854775807')).status, 200, 'the largest row id is a cursor');
        assertError(await history(api, '2'), 404, 'not_found');
        assertError(await history(api, '1x'), 400, 'invalid_pet_id');
        assertError(await api.request({ method: 'GET', url: '/v1/inventory/1/history' }), 401, 'unauthorized');
      });
    });

    describe('reason, an optional extension field of the PATCH body', () => {
      test('each of received, returned, correction is accepted; another value is 400 invalid_reason; unknown fields are still refused', async (t) => {
        const api = await buildTestApp(t, { backend, items: PET_1_AND_INT64_MAX });
        for (const reason of ['received', 'returned', 'correction']) assert.equal((await patch(api, '1', { quantity: 1, reason })).status, 200);
        for (const reason of ['lost', '', null, 3]) assertError(await patch(api, '1', { quantity: 1, reason }), 400, 'invalid_reason');
        assertError(await patch(api, '1', { quantity: 1, note: 'x' }), 400, 'unknown_field');
        assertError(await patch(api, '1', { reason: 'received' }), 400, 'missing_field');
        assert.deepEqual(
          (await history(api, '1')).json<HistoryJson>().items.map((i) => i.reason),
          ['correction', 'returned', 'received'],
        );
      });
    });
  });
}
