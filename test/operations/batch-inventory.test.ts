import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { assertError, buildTestApp, TRANSPORTS, type TestApp } from '../support/app.js';
import { BACKENDS, backendSkip } from '../support/backends.js';
import { INT64_MAX_ID, PET_1_AND_INT64_MAX } from '../support/pets.js';
import { batch, history, type HistoryJson } from '../support/requests.js';
import { itemOf } from '../support/store.js';

/** How many events the log holds, as GET /v1/events answers them. */
async function eventCount(api: TestApp): Promise<number> {
  const res = await api.request({ method: 'GET', url: '/v1/events?limit=1000', key: api.keys.read });
  assert.equal(res.status, 200, res.text);
  return res.json<{ items: unknown[] }>().items.length;
}

/** The counts of pet 1 and the int64-max pet, read from the store (no request: the rate limit is not touched). */
async function counts(api: TestApp): Promise<[number | undefined, number | undefined]> {
  return [(await itemOf(api.store, 1n))?.quantity, (await itemOf(api.store, BigInt(INT64_MAX_ID)))?.quantity];
}

for (const backend of BACKENDS) {
  const skip = await backendSkip(backend);
  for (const transport of TRANSPORTS) {
    describe(`applyInventoryBatch on ${backend} over ${transport}: POST /v1/inventory/batch (decisions 5.12)`, { skip }, () => {
      test('200 applies every change, answered in the order sent with versions; petIds keep every digit; history and events share the request id', async (t) => {
        const api = await buildTestApp(t, { backend, transport, items: PET_1_AND_INT64_MAX });
        const body = `{"changes":[{"petId":${INT64_MAX_ID},"delta":3,"reason":"received"},{"petId":1,"quantity":4,"ifMatch":"\\"v1\\"","reason":"correction"}]}`;
        const res = await batch(api, body, { headers: { 'x-request-id': 'batch-1' } });
        assert.equal(res.status, 200, res.text);
        assert.equal(res.text, `{"items":[{"petId":${INT64_MAX_ID},"quantity":3,"status":"pending","reserved":0,"available":3,"version":2},{"petId":1,"quantity":4,"status":"available","reserved":0,"available":4,"version":2}]}`);
        assert.deepEqual(await counts(api), [4, 3]);
        const rows = (await history(api, INT64_MAX_ID)).json<HistoryJson>().items;
        assert.deepEqual(rows.map((r) => [r.quantity, r.reason, r.requestId]), [[3, 'received', 'batch-1']]);
        assert.equal(await eventCount(api), 4, 'two creations, then one event per change');
      });

      test('a batch with one change that cannot apply applies none and appends no event: its Error object names the change by index', async (t) => {
        const api = await buildTestApp(t, { backend, transport, items: PET_1_AND_INT64_MAX });
        const before = await eventCount(api);
        const cases: [object[], number, string, number][] = [
          [[{ petId: 1, delta: -1 }, { petId: 2, quantity: 1 }], 404, 'not_found', 1],
          [[{ petId: 1, delta: -11, reason: 'sold' }, { petId: 2, quantity: 1 }], 409, 'insufficient_stock', 0],
          [[{ petId: 1, quantity: 1 }, { petId: INT64_MAX_ID, quantity: 1, ifMatch: '"v9"' }], 412, 'precondition_failed', 1],
          [[{ petId: 1, delta: 2147483647 }], 400, 'invalid_quantity', 0],
        ];
        for (const [changes, status, code, index] of cases) {
          const body = JSON.stringify({ changes }).replace(`"${INT64_MAX_ID}"`, INT64_MAX_ID);
          const res = await batch(api, body);
          const error = assertError(res, status, code, index);
          if (code === 'insufficient_stock') assert.match(error.message, /Pet 1 has 10 on hand/);
          if (code === 'precondition_failed') assert.match(error.message, /"v1"/);
          assert.equal(res.headers.etag, undefined, 'a batch answer is about no one entry');
        }
        assert.deepEqual(await counts(api), [10, 0]);
        assert.equal(await eventCount(api), before);
      });

      test('400 for each change that fails validation, by index, before the store', async (t) => {
        const api = await buildTestApp(t, { backend, transport, items: PET_1_AND_INT64_MAX });
        const good = '{"petId":1,"delta":-1}';
        const cases: [string, string, RegExp][] = [
          ['{"petId":"1","delta":-1}', 'invalid_pet_id', /petId must be an integer from -9223372036854775808 to 9223372036854775807; got "1"/],
          ['{"petId":9223372036854775808,"delta":-1}', 'invalid_pet_id', /got 9223372036854775808/],
          ['{"petId":1.5,"delta":-1}', 'invalid_pet_id', /got 1.5/],
          ['{"delta":-1}', 'missing_field', /"petId"/],
          ['{"petId":2,"quantity":-1}', 'invalid_quantity', /quantity must be an integer from 0 to 2147483647/],
          ['{"petId":2,"delta":0}', 'invalid_quantity', /delta must be a non-zero integer from -2147483647 to 2147483647; got 0/],
          ['{"petId":2,"delta":0.5}', 'invalid_quantity', /delta must be/],
          ['{"petId":2,"delta":"-1"}', 'invalid_quantity', /delta must be/],
          ['{"petId":2,"quantity":1,"delta":1}', 'invalid_body', /quantity .* or delta .*, not both/],
          ['{"petId":2}', 'missing_field', /quantity .* or delta/],
          ['{"petId":2,"delta":1,"note":"x"}', 'unknown_field', /Unknown field "note"/],
          ['{"petId":2,"delta":1,"ifMatch":"v1"}', 'invalid_parameter', /ifMatch must be one If-Match value/],
          ['{"petId":2,"delta":1,"ifMatch":7}', 'invalid_parameter', /ifMatch must be one If-Match value/],
          ['{"petId":2,"delta":1,"reason":"stolen"}', 'invalid_reason', /reason must be one of/],
          ['[1]', 'invalid_body', /must be a JSON object/],
          ['{"petId":1,"delta":1}', 'invalid_body', /Pet 1 is already changed by changes\[0\]/],
        ];
        for (const [change, code, message] of cases) {
          const res = await batch(api, `{"changes":[${good},${change}]}`);
          assert.match(assertError(res, 400, code, 1).message, message, change);
        }
        assert.deepEqual(await counts(api), [10, 0]);
      });

      test('400 invalid_body for an empty batch, one over BATCH_MAX_CHANGES, or changes that is not an array; missing_field, unknown_field, malformed_json for the body', async (t) => {
        const api = await buildTestApp(t, { backend, transport, items: PET_1_AND_INT64_MAX, config: { BATCH_MAX_CHANGES: '2' } });
        assert.match(assertError(await batch(api, { changes: [] }), 400, 'invalid_body').message, /1 to 2 changes; got 0 changes/);
        const three = [1, 2, 3].map((petId) => ({ petId, delta: 1 }));
        assert.match(assertError(await batch(api, { changes: three }), 400, 'invalid_body').message, /1 to 2 changes; got 3 changes/);
        assertError(await batch(api, { changes: { petId: 1, delta: 1 } }), 400, 'invalid_body');
        assertError(await batch(api, {}), 400, 'missing_field');
        assert.match(assertError(await batch(api, ''), 400, 'missing_field').message, /"changes" \(required\)/);
        assertError(await batch(api, { changes: [{ petId: 1, delta: 1 }], dryRun: true }), 400, 'unknown_field');
        assertError(await batch(api, '{"changes":['), 400, 'malformed_json');
        assertError(await batch(api, '[]'), 400, 'invalid_body');
        assert.deepEqual(await counts(api), [10, 0]);
      });

      test('401 without a key (before any check of the body), 403 for a read key', async (t) => {
        const api = await buildTestApp(t, { backend, transport, items: PET_1_AND_INT64_MAX });
        assertError(await api.request({ method: 'POST', url: '/v1/inventory/batch', body: '{"changes":[' }), 401, 'unauthorized');
        assertError(await batch(api, { changes: [{ petId: 1, delta: -1 }] }, { key: api.keys.read }), 403, 'forbidden');
        assert.deepEqual(await counts(api), [10, 0]);
      });

      test('Idempotency-Key covers the batch: replayed once applied (Idempotent-Replayed: true), refused as a whole, 422 for another body', async (t) => {
        const api = await buildTestApp(t, { backend, transport, items: PET_1_AND_INT64_MAX });
        const body = { changes: [{ petId: 1, delta: -2, reason: 'sold' }] };
        const first = await batch(api, body, { headers: { 'idempotency-key': 'till-7' } });
        assert.equal(first.status, 200);
        const retry = await batch(api, body, { headers: { 'idempotency-key': 'till-7' } });
        assert.equal(retry.status, 200);
        assert.equal(retry.text, first.text);
        assert.equal(retry.headers['idempotent-replayed'], 'true');
        assert.deepEqual(await counts(api), [8, 0]);
        assertError(await batch(api, { changes: [{ petId: 1, delta: -3 }] }, { headers: { 'idempotency-key': 'till-7' } }), 422, 'idempotency_key_reused');
        const refusal = { changes: [{ petId: 1, delta: -100 }] };
        assertError(await batch(api, refusal, { headers: { 'idempotency-key': 'till-8' } }), 409, 'insufficient_stock', 0);
        const replayed = await batch(api, refusal, { headers: { 'idempotency-key': 'till-8' } });
        assertError(replayed, 409, 'insufficient_stock', 0);
        assert.equal(replayed.headers['idempotent-replayed'], 'true');
        assert.deepEqual(await counts(api), [8, 0]);
      });

      test('Idempotency-Key with a petId beyond 2^53: the key is kept by the id\'s digits, so its replay is the same batch and a neighbouring id is another', async (t) => {
        const api = await buildTestApp(t, { backend, transport, items: PET_1_AND_INT64_MAX });
        const body = `{"changes":[{"petId":${INT64_MAX_ID},"delta":5}]}`;
        const first = await batch(api, body, { headers: { 'idempotency-key': 'big-1' } });
        assert.equal(first.status, 200, first.text);
        const retry = await batch(api, body, { headers: { 'idempotency-key': 'big-1' } });
        assert.equal(retry.status, 200, retry.text);
        assert.equal(retry.headers['idempotent-replayed'], 'true');
        assert.equal(retry.text, first.text);
        const neighbour = `{"changes":[{"petId":${BigInt(INT64_MAX_ID) - 1n},"delta":5}]}`;
        assertError(await batch(api, neighbour, { headers: { 'idempotency-key': 'big-1' } }), 422, 'idempotency_key_reused');
        assert.deepEqual(await counts(api), [10, 5]);
      });

      test('429 by changes: a batch counts as many requests as it has changes, all or nothing, with Retry-After; RateLimit says what is left', async (t) => {
        // The limit counts in one-minute windows of real time: a run that crosses a window's end (seen as a `t` that
        // grew) proves nothing and runs again, on fresh keys. Each key's windows begin at a place of their own in the
        // minute, so any attempt may cross one (a few seconds in sixty on a loaded machine): up to five attempts.
        for (let attempt = 1; ; attempt++) {
          const api = await buildTestApp(t, { backend, transport, items: PET_1_AND_INT64_MAX, config: { RATE_LIMIT_PER_MINUTE: '5' } });
          const one = await batch(api, { changes: [{ petId: 1, delta: -1 }] });
          const two = await batch(api, `{"changes":[{"petId":1,"delta":-1},{"petId":${INT64_MAX_ID},"quantity":1}]}`);
          // Three more do not fit in the two left; pets 2 and 3 have no entry, so a store reached would answer 404.
          const refused = await batch(api, { changes: [{ petId: 1, delta: -1 }, { petId: 2, delta: 1 }, { petId: 3, delta: 1 }] });
          const resets = [one, two, refused].map((res) => Number(/;t=(\d+)$/.exec(String(res.headers.ratelimit))?.[1]));
          if (attempt < 5 && resets.some((reset, i) => i > 0 && reset > resets[i - 1]!)) continue;
          assert.equal(one.status, 200);
          assert.match(String(one.headers.ratelimit), /;r=4;/);
          assert.equal(two.status, 200);
          assert.match(String(two.headers.ratelimit), /;r=2;/, 'two changes, two requests');
          const { message } = assertError(refused, 429, 'rate_limited');
          assert.match(message, /counts as 3 requests/);
          assert.match(String(refused.headers['retry-after']), /^[1-9]\d*$/);
          assert.match(String(refused.headers.ratelimit), /;r=1;/, 'the batch\'s first request counted, the rest not');
          assert.deepEqual(await counts(api), [8, 1], 'nothing of the refused batch applied');
          return;
        }
      });

      test('413 payload_too_large beyond the route\'s limit, BATCH_MAX_CHANGES x 256 bytes (or BODY_LIMIT when larger)', async (t) => {
        const api = await buildTestApp(t, { backend, transport, items: PET_1_AND_INT64_MAX, config: { BATCH_MAX_CHANGES: '4', BODY_LIMIT: '256' } });
        // 1 KiB (4 x 256) is this route's limit, above BODY_LIMIT: a body of 800 bytes passes it and reaches validation.
        const padded = { changes: [{ petId: 1, delta: -1, reason: 'sold' }], pad: 'x'.repeat(750) };
        assertError(await batch(api, padded), 400, 'unknown_field');
        const res = await batch(api, { changes: [{ petId: 1, delta: -1 }], pad: 'x'.repeat(1100) });
        assert.match(assertError(res, 413, 'payload_too_large').message, /limit of 1024 bytes/);
        assert.deepEqual(await counts(api), [10, 0]);
      });
    });
  }
}
