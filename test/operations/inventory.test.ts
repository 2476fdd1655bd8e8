import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { OPERATIONS } from '../../src/operations/index.js';
import { BACKENDS, backendSkip } from '../support/backends.js';
import { assertError, buildTestApp, TRANSPORTS } from '../support/app.js';
import { itemOf } from '../support/store.js';
import { patch } from '../support/requests.js';
import { PETS_OF_EACH_STATUS } from '../support/pets.js';


const INT64_MAX = '9223372036854775807';
const INT64_MIN = '-9223372036854775808';

for (const backend of BACKENDS) {
  const skip = await backendSkip(backend);
  for (const transport of TRANSPORTS) {
    describe(`API on ${backend} over ${transport}`, { skip }, () => {
      describe('listInventory: GET /v1/inventory', () => {
        test('200 lists every entry as InventoryItem, ordered by petId ascending (decisions 3.7)', async (t) => {
          const api = await buildTestApp(t, { backend, transport, items: PETS_OF_EACH_STATUS });
          const res = await api.request({ method: 'GET', url: '/v1/inventory', key: api.keys.read });
          assert.equal(res.status, 200);
          assert.equal(res.text, '[{"petId":1,"quantity":12,"status":"available","reserved":0,"available":12},{"petId":2,"quantity":4,"status":"pending","reserved":0,"available":4},{"petId":3,"quantity":0,"status":"sold","reserved":0,"available":0}]');
          assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
        });

        test('200 with an empty array when the store has no entries', async (t) => {
          const api = await buildTestApp(t, { backend, transport });
          const res = await api.request({ method: 'GET', url: '/v1/inventory', key: api.keys.read });
          assert.equal(res.status, 200);
          assert.equal(res.text, '[]');
        });

        test('orders negative, zero and large ids numerically, not as text', async (t) => {
          const ids = [INT64_MAX, '10', '-1', '9', INT64_MIN, '0', '9007199254740993'];
          const api = await buildTestApp(t, { backend, transport, items: ids.map((id) => ({ petId: BigInt(id), quantity: 1, status: 'available' })) });
          const res = await api.request({ method: 'GET', url: '/v1/inventory', key: api.keys.read });
          const order = [...res.text.matchAll(/"petId":(-?\d+)/g)].map((m) => m[1]);
          assert.deepEqual(order, [INT64_MIN, '-1', '0', '9', '10', '9007199254740993', INT64_MAX]);
        });

        test('HEAD answers like GET without a body', async (t) => {
          const api = await buildTestApp(t, { backend, transport, items: PETS_OF_EACH_STATUS });
          const res = await api.request({ method: 'HEAD', url: '/v1/inventory', key: api.keys.read });
          assert.equal(res.status, 200);
          assert.equal(res.text, '');
        });

        test('400 invalid_parameter for a query parameter the operation does not declare, saying it takes none', async (t) => {
          const api = await buildTestApp(t, { backend, transport });
          const res = await api.request({ method: 'GET', url: '/v1/inventory?limit=5', key: api.keys.read });
          assert.equal(assertError(res, 400, 'invalid_parameter').message, 'Unknown query parameter "limit": this operation takes none.');
        });
      });

      describe('updateInventory: PATCH /v1/inventory/{petId}', () => {
        test('200 returns the updated entry and the change is visible in the list', async (t) => {
          const api = await buildTestApp(t, { backend, transport, items: PETS_OF_EACH_STATUS });
          const res = await patch(api, '2', { quantity: 40 });
          assert.equal(res.status, 200);
          assert.deepEqual(res.json(), { petId: 2, quantity: 40, status: 'pending', reserved: 0, available: 40 });
          const list = await api.request({ method: 'GET', url: '/v1/inventory', key: api.keys.read });
          assert.match(list.text, /\{"petId":2,"quantity":40,"status":"pending","reserved":0,"available":40\}/);
        });

        test('status never changes through PATCH (decisions 3.6)', async (t) => {
          const api = await buildTestApp(t, { backend, transport, items: PETS_OF_EACH_STATUS });
          const res = await patch(api, '3', { quantity: 5 });
          assert.deepEqual(res.json(), { petId: 3, quantity: 5, status: 'sold', reserved: 0, available: 5 });
        });

        test('quantity bounds 0 and 2147483647 are accepted (decisions 3.3)', async (t) => {
          const api = await buildTestApp(t, { backend, transport, items: PETS_OF_EACH_STATUS });
          assert.equal((await patch(api, '1', { quantity: 0 })).json<{ quantity: number }>().quantity, 0);
          assert.equal((await patch(api, '1', { quantity: 2147483647 })).json<{ quantity: number }>().quantity, 2147483647);
        });

        test('application/merge-patch+json and a utf-8 charset are accepted (decisions 3.5)', async (t) => {
          const api = await buildTestApp(t, { backend, transport, items: PETS_OF_EACH_STATUS });
          for (const type of ['application/merge-patch+json', 'application/json; charset=utf-8', 'application/json;charset=UTF-8']) {
            const res = await patch(api, '1', { quantity: 8 }, { headers: { 'content-type': type } });
            assert.equal(res.status, 200, type);
          }
        });

        test('404 not_found when the pet has no entry (decisions 5.1), and nothing is created', async (t) => {
          const api = await buildTestApp(t, { backend, transport, items: PETS_OF_EACH_STATUS });
          assertError(await patch(api, '99', { quantity: 1 }), 404, 'not_found');
          assert.equal((await itemOf(api.store, 99n)), undefined);
        });

        test('a retired entry (pets remove) is 404 not_found to PATCH and GET, leaves the list, and its history still answers (decisions 5.7)', async (t) => {
          const api = await buildTestApp(t, { backend, transport, items: PETS_OF_EACH_STATUS });
          assert.equal((await patch(api, '1', { quantity: 11, reason: 'correction' })).status, 200);
          assert.equal((await api.store.changes.retireEntry(1n, { force: true, at: new Date() })).kind, 'retired');

          for (const res of [
            await patch(api, '1', { quantity: 5 }),
            await patch(api, '1', { quantity: 5 }, { headers: { 'if-match': '*' } }),
            await api.request({ method: 'GET', url: '/v1/inventory/1', key: api.keys.read }),
          ]) {
            assert.deepEqual(assertError(res, 404, 'not_found'), { code: 'not_found', message: 'Pet 1 has no inventory entry.', status: 404 });
          }
          const list = await api.request({ method: 'GET', url: '/v1/inventory', key: api.keys.read });
          assert.equal(list.text, '[{"petId":2,"quantity":4,"status":"pending","reserved":0,"available":4},{"petId":3,"quantity":0,"status":"sold","reserved":0,"available":0}]');
          const history = await api.request({ method: 'GET', url: '/v1/inventory/1/history', key: api.keys.read });
          assert.equal(history.status, 200);
          assert.deepEqual(
            history.json<{ items: { previousQuantity: number; quantity: number; reason: string }[] }>().items.map((h) => [h.previousQuantity, h.quantity, h.reason]),
            [[12, 11, 'correction']],
          );
        });

        describe('400 for a petId that is not a canonical int64 (decisions 3.1)', () => {
          for (const bad of ['abc', '1.5', '01', '+1', '1e3', ' 1', '9223372036854775808', '-9223372036854775809', '0x10', '1'.repeat(400), '%zz', '-', '']) {
            test(`petId ${JSON.stringify(bad.length > 30 ? `${bad.slice(0, 10)}...` : bad)}`, async (t) => {
              const api = await buildTestApp(t, { backend, transport, items: PETS_OF_EACH_STATUS });
              const res = await patch(api, encodeURIComponent(bad).replace('%25zz', '%zz'), { quantity: 1 });
              assertError(res, 400, 'invalid_pet_id');
            });
          }
        });

        describe('400 invalid_quantity for a value that is not an integer in 0..2147483647 (decisions 3.3)', () => {
          for (const bad of [-1, 2147483648, 1.5, '5', true, null, [], {}, 1e300]) {
            test(`quantity ${JSON.stringify(bad)}`, async (t) => {
              const api = await buildTestApp(t, { backend, transport, items: PETS_OF_EACH_STATUS });
              const body = assertError(await patch(api, '1', `{"quantity":${JSON.stringify(bad)}}`), 400, 'invalid_quantity');
              assert.match(body.message, /0 to 2147483647/);
              assert.equal((await itemOf(api.store, 1n))?.quantity, 12, 'nothing changed');
            });
          }
        });

        test('400 missing_field when the body lacks quantity, or there is no body (decisions 3.4), naming quantity alone as required', async (t) => {
          const api = await buildTestApp(t, { backend, transport, items: PETS_OF_EACH_STATUS });
          assert.equal(assertError(await patch(api, '1', {}), 400, 'missing_field').message, 'Missing required field "quantity".');
          assert.equal(assertError(await patch(api, '1', { reason: 'received' }), 400, 'missing_field').message, 'Missing required field "quantity".');
          const noBodyMessage = 'The request body is empty: send a JSON object with "quantity" (required) and "reason" (optional).';
          assert.equal(assertError(await patch(api, '1', ''), 400, 'missing_field').message, noBodyMessage);
          assert.equal(assertError(await patch(api, '1', ' \n'), 400, 'missing_field').message, noBodyMessage);
          // No body and no Content-Type, as `curl -X PATCH` sends it.
          const noBody = await api.request({ method: 'PATCH', url: '/v1/inventory/1', key: api.keys.write });
          assert.equal(assertError(noBody, 400, 'missing_field').message, noBodyMessage);
          assert.equal((await api.request({ method: 'GET', url: '/v1/inventory/1', key: api.keys.read })).json<{ quantity: number }>().quantity, 12, 'nothing changed');
        });

        test('400 unknown_field naming the field, and nothing changes (decisions 3.4)', async (t) => {
          const api = await buildTestApp(t, { backend, transport, items: PETS_OF_EACH_STATUS });
          const body = assertError(await patch(api, '1', { quantity: 5, status: 'sold' }), 400, 'unknown_field');
          assert.match(body.message, /"status"/);
          assert.deepEqual(await itemOf(api.store, 1n), { petId: 1n, quantity: 12, status: 'available' });
        });

        test('400 unknown_field for __proto__, constructor and prototype keys, never merged (decisions 3.4)', async (t) => {
          const api = await buildTestApp(t, { backend, transport, items: PETS_OF_EACH_STATUS });
          for (const key of ['__proto__', 'constructor', 'prototype']) {
            const res = await patch(api, '1', `{"quantity":5,"${key}":{"quantity":1}}`);
            assert.match(assertError(res, 400, 'unknown_field').message, new RegExp(key));
          }
          assert.equal(({} as Record<string, unknown>).quantity, undefined, 'Object.prototype untouched');
          assert.equal((await itemOf(api.store, 1n))?.quantity, 12);
        });

        test('400 malformed_json for a body that is not JSON (decisions 3.4)', async (t) => {
          const api = await buildTestApp(t, { backend, transport, items: PETS_OF_EACH_STATUS });
          for (const text of ['{', '{"quantity": 5,}', 'quantity=5', '{"quantity": 5} x']) {
            assertError(await patch(api, '1', text), 400, 'malformed_json');
          }
        });

        test('400 invalid_body for JSON that is not an object (decisions 3.4)', async (t) => {
          const api = await buildTestApp(t, { backend, transport, items: PETS_OF_EACH_STATUS });
          for (const text of ['null', '[{"quantity":5}]', '5', '"quantity"', 'true']) {
            assertError(await patch(api, '1', text), 400, 'invalid_body');
          }
        });

        test('415 unsupported_media_type for other media types and charsets (decisions 3.5)', async (t) => {
          const api = await buildTestApp(t, { backend, transport, items: PETS_OF_EACH_STATUS });
          for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/json-patch+json', 'application/json; charset=latin1']) {
            assertError(await patch(api, '1', '{"quantity":5}', { headers: { 'content-type': type } }), 415, 'unsupported_media_type');
          }
          const noType = await api.request({ method: 'PATCH', url: '/v1/inventory/1', key: api.keys.write, body: '{"quantity":5}' });
          assertError(noType, 415, 'unsupported_media_type');
        });

        test('413 payload_too_large over the body limit (decisions 3.5), configurable', async (t) => {
          const api = await buildTestApp(t, { backend, transport, items: PETS_OF_EACH_STATUS, config: { BODY_LIMIT: '64' } });
          const res = await patch(api, '1', JSON.stringify({ quantity: 5 }).padEnd(65, ' '));
          assert.match(assertError(res, 413, 'payload_too_large').message, /64 bytes/);
          assert.equal((await patch(api, '1', { quantity: 5 })).status, 200);
        });

        test('the validation order is fixed: petId, then media type, then body', async (t) => {
          const api = await buildTestApp(t, { backend, transport, items: PETS_OF_EACH_STATUS });
          assertError(await patch(api, 'x', '{', { headers: { 'content-type': 'text/plain' } }), 400, 'invalid_pet_id');
          assertError(await patch(api, '1', '{', { headers: { 'content-type': 'text/plain' } }), 415, 'unsupported_media_type');
          assertError(await patch(api, '99', { quantity: -1 }), 400, 'invalid_quantity');
        });
      });

      describe('int64 petIds round-trip digit for digit (decisions 3.2)', () => {
        for (const id of ['9007199254740991', '9007199254740993', INT64_MAX, INT64_MIN, '-9007199254740993', '0']) {
          test(`petId ${id}`, async (t) => {
            const api = await buildTestApp(t, { backend, transport, items: [{ petId: BigInt(id), quantity: 1, status: 'available' }] });
            const res = await patch(api, id, { quantity: 77 });
            assert.equal(res.status, 200);
            assert.equal(res.text, `{"petId":${id},"quantity":77,"status":"available","reserved":0,"available":77}`);
            const list = await api.request({ method: 'GET', url: '/v1/inventory', key: api.keys.read });
            assert.equal(list.text, `[{"petId":${id},"quantity":77,"status":"available","reserved":0,"available":77}]`);
            assert.equal((await itemOf(api.store, BigInt(id)))?.quantity, 77);
          });
        }

        test('2^53 + 1 and 2^53 are different entries', async (t) => {
          const api = await buildTestApp(t, {
            backend,
            transport,
            items: [
              { petId: 9007199254740992n, quantity: 1, status: 'available' },
              { petId: 9007199254740993n, quantity: 2, status: 'available' },
            ],
          });
          await patch(api, '9007199254740993', { quantity: 50 });
          assert.equal((await itemOf(api.store, 9007199254740992n))?.quantity, 1);
          assert.equal((await itemOf(api.store, 9007199254740993n))?.quantity, 50);
        });
      });
    });
  }
}

test('every declared query parameter says in words what it accepts, for the message refusing it (decisions 4.3)', () => {
  for (const op of OPERATIONS) {
    assert.deepEqual(Object.keys(op.queryAccepts ?? {}).sort(), Object.keys(op.querystring?.properties ?? {}).sort(), op.operationId);
  }
});
