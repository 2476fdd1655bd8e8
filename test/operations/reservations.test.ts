import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { assertError, buildTestApp, makeKey, TRANSPORTS, type TestApp } from '../support/app.js';
import { BACKENDS, backendSkip } from '../support/backends.js';
import { adjust, patch } from '../support/requests.js';
import { newReservationId } from '../../src/operations/reservation-parts.js';

/** The reservation operations (decisions 12): POST/GET /v1/reservations, GET one, commit, release. */

interface ReservationJson {
  id: string;
  status: string;
  items: { petId: number; quantity: number }[];
  reference: string | null;
  createdAt: string;
  expiresAt: string;
}

const PETS = [
  { petId: 1n, quantity: 10, status: 'available' as const },
  { petId: 2n, quantity: 3, status: 'available' as const },
];

function reserve(api: TestApp, body: unknown, options: { key?: string; headers?: Record<string, string> } = {}) {
  return api.request({
    method: 'POST',
    url: '/v1/reservations',
    key: options.key ?? api.keys.write,
    headers: { 'content-type': 'application/json', ...options.headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

function end(api: TestApp, id: string, how: 'commit' | 'release', key = api.keys.write) {
  return api.request({ method: 'POST', url: `/v1/reservations/${id}/${how}`, key });
}

async function stock(api: TestApp, petId: number): Promise<{ quantity: number; reserved: number; available: number }> {
  const res = await api.request({ method: 'GET', url: `/v1/inventory/${petId}`, key: api.keys.read });
  assert.equal(res.status, 200, res.text);
  const { quantity, reserved, available } = res.json<{ quantity: number; reserved: number; available: number }>();
  return { quantity, reserved, available };
}

for (const backend of BACKENDS) {
  const skip = await backendSkip(backend);
  for (const transport of TRANSPORTS) {
    describe(`reservations on ${backend} over ${transport} (decisions 12)`, { skip }, () => {
      test('201 with Location: every item held, reserved and available on every entry; get, commit, commit again', async (t) => {
        const api = await buildTestApp(t, { backend, transport, items: PETS });
        const res = await reserve(api, { items: [{ petId: 1, quantity: 2 }, { petId: 2, quantity: 3 }], ttlSeconds: 60, reference: 'order-1234' });
        assert.equal(res.status, 201, res.text);
        const made = res.json<ReservationJson>();
        assert.match(made.id, /^res_[0-9a-f]{24}$/);
        // Its first 12 digits are the millisecond it was made (decisions 12.5): its createdAt, or the moment before the store stamped it.
        const madeAt = parseInt(made.id.slice(4, 16), 16);
        assert.ok(madeAt <= Date.parse(made.createdAt) && Date.parse(made.createdAt) - madeAt < 5_000, `${made.id} ${made.createdAt}`);
        assert.equal(res.headers.location, `/v1/reservations/${made.id}`);
        assert.deepEqual([made.status, made.items, made.reference], ['active', [{ petId: 1, quantity: 2 }, { petId: 2, quantity: 3 }], 'order-1234']);
        assert.equal(Date.parse(made.expiresAt) - Date.parse(made.createdAt), 60_000);
        assert.deepEqual(await stock(api, 1), { quantity: 10, reserved: 2, available: 8 });
        const list = await api.request({ method: 'GET', url: '/v1/inventory', key: api.keys.read });
        assert.equal(list.text, '[{"petId":1,"quantity":10,"status":"available","reserved":2,"available":8},{"petId":2,"quantity":3,"status":"available","reserved":3,"available":0}]');
        assert.deepEqual((await api.request({ method: 'GET', url: `/v1/reservations/${made.id}`, key: api.keys.write })).json(), made);

        const committed = await end(api, made.id, 'commit');
        assert.equal(committed.status, 200, committed.text);
        assert.equal(committed.json<ReservationJson>().status, 'committed');
        assert.deepEqual(await stock(api, 1), { quantity: 8, reserved: 0, available: 8 });
        assert.deepEqual(await stock(api, 2), { quantity: 0, reserved: 0, available: 0 });
        const again = await end(api, made.id, 'commit');
        assert.equal(again.status, 200);
        assert.deepEqual(again.json(), committed.json());
        assert.match(assertError(await end(api, made.id, 'release'), 409, 'reservation_not_active').message, /is committed/);
      });

      test('release gives the stock back; again the same 200; commit after it is 409 reservation_not_active', async (t) => {
        const api = await buildTestApp(t, { backend, transport, items: PETS });
        const made = (await reserve(api, { items: [{ petId: 2, quantity: 3 }] })).json<ReservationJson>();
        assert.equal(Date.parse(made.expiresAt) - Date.parse(made.createdAt), 900_000, 'RESERVATION_TTL_SECONDS by default');
        assert.equal((await end(api, made.id, 'release')).status, 200);
        assert.deepEqual(await stock(api, 2), { quantity: 3, reserved: 0, available: 3 });
        const again = await end(api, made.id, 'release');
        assert.equal(again.status, 200);
        assert.equal(again.json<ReservationJson>().status, 'released');
        assert.match(assertError(await end(api, made.id, 'commit'), 409, 'reservation_not_active').message, /is released/);
      });

      test('409 insufficient_stock and 404 not_found name the item by index; nothing is held', async (t) => {
        const api = await buildTestApp(t, { backend, transport, items: PETS });
        const short = assertError(await reserve(api, { items: [{ petId: 1, quantity: 1 }, { petId: 2, quantity: 4 }] }), 409, 'insufficient_stock', 1);
        assert.match(short.message, /^items\[1\]: Pet 2 has 3 available \(3 on hand, 0 held by reservations\); 4 asked for/);
        assertError(await reserve(api, { items: [{ petId: 1, quantity: 1 }, { petId: 99, quantity: 1 }] }), 404, 'not_found', 1);
        assert.deepEqual(await stock(api, 1), { quantity: 10, reserved: 0, available: 10 });
      });

      test('400 for a bad item (its field\'s code, by index) or body; nothing is held', async (t) => {
        const api = await buildTestApp(t, { backend, transport, items: PETS, config: { RESERVATION_MAX_ITEMS: '2' } });
        assertError(await reserve(api, { items: [{ petId: 1, quantity: 0 }] }), 400, 'invalid_quantity', 0);
        assertError(await reserve(api, { items: [{ petId: 1, quantity: 1 }, { petId: 2, quantity: 1.5 }] }), 400, 'invalid_quantity', 1);
        assertError(await reserve(api, { items: [{ petId: 'x', quantity: 1 }] }), 400, 'invalid_pet_id', 0);
        assertError(await reserve(api, { items: [{ petId: 1 }] }), 400, 'missing_field', 0);
        assertError(await reserve(api, { items: [{ petId: 1, quantity: 1, extra: 1 }] }), 400, 'unknown_field', 0);
        assertError(await reserve(api, { items: [{ petId: 1, quantity: 1 }, { petId: 1, quantity: 1 }] }), 400, 'invalid_body', 1);
        assertError(await reserve(api, { items: [] }), 400, 'invalid_body');
        assertError(await reserve(api, { items: [{ petId: 1, quantity: 1 }, { petId: 2, quantity: 1 }, { petId: 3, quantity: 1 }] }), 400, 'invalid_body');
        assertError(await reserve(api, { items: [{ petId: 1, quantity: 1 }], ttlSeconds: 0 }), 400, 'invalid_body');
        assertError(await reserve(api, { items: [{ petId: 1, quantity: 1 }], reference: 'x'.repeat(201) }), 400, 'invalid_body');
        assertError(await reserve(api, { items: [{ petId: 1, quantity: 1 }], color: 'red' }), 400, 'unknown_field');
        assertError(await reserve(api, '[1]'), 400, 'invalid_body');
        assertError(await reserve(api, '{'), 400, 'malformed_json');
        assert.deepEqual(await stock(api, 1), { quantity: 10, reserved: 0, available: 10 });
      });

      test('Idempotency-Key: a replay answers the same reservation, nothing held twice; another body is 422', async (t) => {
        const api = await buildTestApp(t, { backend, transport, items: PETS });
        const headers = { 'idempotency-key': 'checkout-1' };
        const first = await reserve(api, { items: [{ petId: 1, quantity: 2 }] }, { headers });
        const replay = await reserve(api, { items: [{ petId: 1, quantity: 2 }] }, { headers });
        assert.equal(replay.status, 201);
        assert.equal(replay.headers['idempotent-replayed'], 'true');
        assert.equal(replay.text, first.text);
        assert.deepEqual(await stock(api, 1), { quantity: 10, reserved: 2, available: 8 });
        assertError(await reserve(api, { items: [{ petId: 1, quantity: 3 }] }, { headers }), 422, 'idempotency_key_reused');
      });

      test('GET one: 404 for an unknown or malformed id; the list pages newest first by status and pet', async (t) => {
        const api = await buildTestApp(t, { backend, transport, items: PETS });
        assertError(await api.request({ method: 'GET', url: '/v1/reservations/res_000000000000000000000000', key: api.keys.write }), 404, 'not_found');
        assertError(await api.request({ method: 'GET', url: '/v1/reservations/nope', key: api.keys.write }), 404, 'not_found');
        assertError(await end(api, 'res_000000000000000000000000', 'commit'), 404, 'not_found');
        const a = (await reserve(api, { items: [{ petId: 1, quantity: 1 }] })).json<ReservationJson>();
        const b = (await reserve(api, { items: [{ petId: 2, quantity: 1 }] })).json<ReservationJson>();
        await end(api, a.id, 'release');
        const page = (query: string) => api.request({ method: 'GET', url: `/v1/reservations${query}`, key: api.keys.write });
        const ids = async (query: string) => (await page(query)).json<{ items: ReservationJson[] }>().items.map((r) => r.id);
        assert.deepEqual(await ids(''), [b.id, a.id]);
        assert.deepEqual(await ids('?status=active'), [b.id]);
        assert.deepEqual(await ids('?petId=1'), [a.id]);
        const first = (await page('?limit=1')).json<{ nextCursor: string }>();
        assert.deepEqual(await ids(`?limit=1&cursor=${first.nextCursor}`), [a.id]);
        assertError(await page('?status=gone'), 400, 'invalid_parameter');
        assertError(await page('?cursor=x'), 400, 'invalid_parameter');
        // 19 digits the pattern takes but no int64 place holds: refused as never issued, not passed to the store.
        assertError(await page('?cursor=r9223372036854775808'), 400, 'invalid_parameter');
        assertError(await page('?limit=0'), 400, 'invalid_parameter');
      });

      test('scopes: reservations:write reserves and reads stock but is 403 on PATCH; a read-only key is 403 on every reservation operation', async (t) => {
        const api = await buildTestApp(t, { backend, transport, items: PETS });
        const storefront = await makeKey(api.store, 'production', ['reservations:write']);
        const made = await reserve(api, { items: [{ petId: 1, quantity: 1 }] }, { key: storefront });
        assert.equal(made.status, 201);
        assert.equal((await api.request({ method: 'GET', url: '/v1/inventory', key: storefront })).status, 200);
        assertError(await patch(api, '1', { quantity: 5 }, { key: storefront }), 403, 'forbidden');
        const id = made.json<ReservationJson>().id;
        assertError(await reserve(api, { items: [{ petId: 1, quantity: 1 }] }, { key: api.keys.read }), 403, 'forbidden');
        assertError(await end(api, id, 'commit', api.keys.read), 403, 'forbidden');
        assertError(await end(api, id, 'release', api.keys.read), 403, 'forbidden');
        assertError(await api.request({ method: 'GET', url: `/v1/reservations/${id}`, key: api.keys.read }), 403, 'forbidden');
        assertError(await api.request({ method: 'GET', url: '/v1/reservations', key: api.keys.read }), 403, 'forbidden');
        assertError(await api.request({ method: 'POST', url: '/v1/reservations', body: {} }), 401, 'unauthorized');
        assert.equal((await end(api, id, 'commit', storefront)).status, 200);
      });

      test('an adjustment may not sell what is held: 409 naming on hand and held; a count applies', async (t) => {
        const api = await buildTestApp(t, { backend, transport, items: PETS });
        await reserve(api, { items: [{ petId: 2, quantity: 2 }] });
        const refused = assertError(await adjust(api, '2', { delta: -2, reason: 'sold' }), 409, 'insufficient_stock');
        assert.match(refused.message, /Pet 2 has 3 on hand; a delta of -2 would take what is available below 0: reservations hold 2 of them/);
        assert.equal((await adjust(api, '2', { delta: -1, reason: 'sold' })).status, 200);
        const counted = await patch(api, '2', { quantity: 1 });
        assert.equal(counted.text, '{"petId":2,"quantity":1,"status":"available","reserved":2,"available":0}');
      });

      test('the events: reservation.created then, on commit, inventory.updated (reason sold) per pet and reservation.committed', async (t) => {
        const api = await buildTestApp(t, { backend, transport, items: PETS });
        const made = (await reserve(api, { items: [{ petId: 1, quantity: 2 }], reference: 'order-9' })).json<ReservationJson>();
        await end(api, made.id, 'commit');
        const res = await api.request({ method: 'GET', url: '/v1/events', key: api.keys.read });
        const events = res.json<{ items: { type: string; data: Record<string, unknown> }[] }>().items;
        assert.deepEqual(
          events.map((e) => e.type),
          ['inventory.created', 'inventory.created', 'reservation.created', 'inventory.updated', 'reservation.committed'],
        );
        const created = events[2]!.data;
        assert.deepEqual(Object.keys(created), ['reservationId', 'status', 'items', 'reference', 'expiresAt', 'source', 'keyId', 'requestId']);
        assert.deepEqual([created['reservationId'], created['status'], created['items'], created['reference'], created['source']], [made.id, 'active', [{ petId: 1, quantity: 2 }], 'order-9', 'api']);
        assert.deepEqual([events[3]!.data['quantity'], events[3]!.data['reason']], [8, 'sold']);
      });
    });
  }
}

test('reservation ids: res_, the millisecond in 12 hex digits, then 12 random ones, so ids made later sort later', () => {
  const ids = Array.from({ length: 1000 }, (_, i) => newReservationId(1_765_000_000_000 + Math.floor(i / 10)));
  for (const id of ids) assert.match(id, /^res_[0-9a-f]{24}$/);
  assert.equal(new Set(ids).size, ids.length, 'the random half tells ids of one millisecond apart');
  assert.equal(ids[0]!.slice(4, 16), (1_765_000_000_000).toString(16).padStart(12, '0'));
  for (let i = 10; i < ids.length; i += 10) assert.ok(ids[i - 1]! < ids[i]!, 'a later millisecond sorts after');
});
