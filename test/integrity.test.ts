import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { InventoryItem } from '../src/schemas/inventory.js';
import { BACKENDS, backendSkip } from './backends.js';
import { assertError, buildTestApp, makeKey, type TestApp, type TestResponse } from './helper.js';
import { itemOf } from './store-helpers.js';

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

function history(api: TestApp, petId: string, query = ''): Promise<TestResponse> {
  return api.request({ method: 'GET', url: `/v1/inventory/${petId}/history${query}`, key: api.keys.read });
}

interface HistoryJson {
  items: { petId: number; previousQuantity: number; quantity: number; at: string; keyId: string; keyName: string; requestId: string; reason: string | null }[];
  nextCursor: string | null;
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

    describe('conditional PATCH (If-Match)', () => {
      test('PATCH answers the new ETag; the ETag of a GET updates once, then is stale: 412 with the current ETag', async (t) => {
        const api = await buildTestApp(t, { backend, items: PETS });
        const etag = String((await getItem(api, '1')).headers.etag);
        const first = await patch(api, '1', { quantity: 11 }, { 'if-match': etag });
        assert.equal(first.status, 200);
        assert.deepEqual(first.json(), { petId: 1, quantity: 11, status: 'available' });
        const newEtag = String(first.headers.etag);
        assert.notEqual(newEtag, etag);
        assert.equal((await getItem(api, '1')).headers.etag, newEtag);

        const stale = await patch(api, '1', { quantity: 99 }, { 'if-match': etag });
        assertError(stale, 412, 'precondition_failed');
        assert.equal(stale.headers.etag, newEtag, 'the current ETag comes with the 412');
        assert.equal((await itemOf(api.store, 1n))?.quantity, 11, 'nothing changed');
      });

      test('If-Match: * matches any existing entry; a list matches any of its tags; a weak tag never matches', async (t) => {
        const api = await buildTestApp(t, { backend, items: PETS });
        const etag = String((await getItem(api, '1')).headers.etag);
        assert.equal((await patch(api, '1', { quantity: 1 }, { 'if-match': '*' })).status, 200);
        const current = String((await getItem(api, '1')).headers.etag);
        assert.equal((await patch(api, '1', { quantity: 2 }, { 'if-match': `${etag}, ${current}` })).status, 200);
        const now = String((await getItem(api, '1')).headers.etag);
        assertError(await patch(api, '1', { quantity: 3 }, { 'if-match': `W/${now}` }), 412, 'precondition_failed');
      });

      test('404 wins over the precondition for a pet with no entry; 400 invalid_parameter for a malformed If-Match', async (t) => {
        const api = await buildTestApp(t, { backend, items: PETS });
        assertError(await patch(api, '5', { quantity: 1 }, { 'if-match': '*' }), 404, 'not_found');
        const bad = assertError(await patch(api, '1', { quantity: 1 }, { 'if-match': 'v1' }), 400, 'invalid_parameter');
        assert.match(bad.message, /If-Match/);
      });

      test('with REQUIRE_IF_MATCH=true a PATCH without If-Match is 428 precondition_required and changes nothing', async (t) => {
        const api = await buildTestApp(t, { backend, items: PETS, config: { REQUIRE_IF_MATCH: 'true' } });
        assertError(await patch(api, '1', { quantity: 3 }), 428, 'precondition_required');
        assert.equal((await itemOf(api.store, 1n))?.quantity, 10);
        const etag = String((await getItem(api, '1')).headers.etag);
        assert.equal((await patch(api, '1', { quantity: 3 }, { 'if-match': etag })).status, 200);
      });

      test('20 clients each add 1 to one entry 25 times by GET then PATCH If-Match, retrying on 412: +500 exactly, 500 chained history rows', async (t) => {
        // Thousands of 412 retries from one key within a minute: the rate limit is not what this tests.
        const api = await buildTestApp(t, { backend, items: PETS, transport: 'http', config: { RATE_LIMIT_PER_MINUTE: '0' } });
        let conflicts = 0;
        const client = async () => {
          for (let done = 0; done < 25; ) {
            const read = await getItem(api, '1');
            const { quantity } = read.json<{ quantity: number }>();
            const res = await patch(api, '1', { quantity: quantity + 1 }, { 'if-match': String(read.headers.etag) });
            if (res.status === 412) {
              conflicts++;
              continue;
            }
            assert.equal(res.status, 200, res.text);
            done++;
          }
        };
        await Promise.all(Array.from({ length: 20 }, client));
        assert.equal((await itemOf(api.store, 1n))?.quantity, 10 + 500);
        const rows: HistoryJson['items'] = [];
        for (let cursor: string | null = ''; cursor !== null; ) {
          const page: HistoryJson = (await history(api, '1', `?limit=500${cursor ? `&cursor=${cursor}` : ''}`)).json<HistoryJson>();
          rows.push(...page.items);
          cursor = page.nextCursor;
        }
        assert.equal(rows.length, 500);
        // Newest first: each row's previous value is the next (older) row's new value, down to the start.
        rows.forEach((row, i) => {
          assert.equal(row.quantity, row.previousQuantity + 1);
          assert.equal(row.previousQuantity, i === rows.length - 1 ? 10 : rows[i + 1]!.quantity);
        });
        t.diagnostic(`${conflicts} conflicts (412) retried`);
      });
    });

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

    describe('change history: GET /v1/inventory/{petId}/history', () => {
      test('lists changes newest first with key id and name, request id, reason and time; never the key', async (t) => {
        const api = await buildTestApp(t, { backend, items: PETS });
        const before = Date.now();
        await patch(api, '1', { quantity: 12, reason: 'received' }, { 'x-request-id': 'req-received-1' });
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
        const api = await buildTestApp(t, { backend, items: PETS });
        for (let q = 1; q <= 5; q++) await patch(api, INT64_MAX, { quantity: q });
        const first = (await history(api, INT64_MAX, '?limit=2')).json<HistoryJson>();
        assert.deepEqual(first.items.map((i) => i.quantity), [5, 4]);
        assert.equal(typeof first.nextCursor, 'string');
        const second = (await history(api, INT64_MAX, `?limit=2&cursor=${first.nextCursor}`)).json<HistoryJson>();
        assert.deepEqual(second.items.map((i) => i.quantity), [3, 2]);
        const third = (await history(api, INT64_MAX, `?limit=2&cursor=${second.nextCursor}`)).json<HistoryJson>();
        assert.deepEqual(third.items.map((i) => i.quantity), [1]);
        assert.equal(third.nextCursor, null);
        assert.match((await history(api, INT64_MAX)).text, new RegExp(`"petId":${INT64_MAX}`), 'exact int64 digits');
      });

      test('400 invalid_parameter for a bad limit or cursor or an unknown parameter; 404 not_found; 401 without a key', async (t) => {
        const api = await buildTestApp(t, { backend, items: PETS });
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
        const api = await buildTestApp(t, { backend, items: PETS });
        for (const reason of ['received', 'returned', 'correction']) assert.equal((await patch(api, '1', { quantity: 1, reason }, {})).status, 200);
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
