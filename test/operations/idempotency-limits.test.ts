import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { KEY_CACHE_TTL_MS } from '../../src/auth/authenticator.js';
import { IDEMPOTENCY_TTL_MS } from '../../src/operations/idempotency.js';
import type { InventoryItem } from '../../src/schemas/inventory.js';
import { BACKENDS, backendSkip } from '../support/backends.js';
import { assertError, buildTestApp, type TestApp, type TestResponse } from '../support/app.js';

/**
 * The HTTP side of what one key can make the service store (decisions 5.6, 7.2): an
 * Idempotency-Key of at most 255 characters, and at most IDEMPOTENCY_RECORDS_PER_KEY live records
 * per API key, refused with 429 and Retry-After; in both lanes.
 */

const PETS: InventoryItem[] = Array.from({ length: 5 }, (_, i) => ({ petId: BigInt(i + 1), quantity: 0, status: 'available' }));

type Lane = 'fast lane' | 'Fastify';

/** A PATCH through the lane asked for: over the socket (the lane, once the key is cached) or app.inject (Fastify's routes). */
async function patch(api: TestApp, lane: Lane, petId: number, quantity: number, idempotencyKey?: string): Promise<TestResponse> {
  const headers: Record<string, string> = idempotencyKey === undefined ? {} : { 'idempotency-key': idempotencyKey };
  if (lane === 'Fastify') {
    const res = await api.app.inject({
      method: 'PATCH',
      url: `/v1/inventory/${petId}`,
      headers: { ...headers, authorization: `Bearer ${api.keys.write}`, 'content-type': 'application/json' },
      payload: JSON.stringify({ quantity }),
    });
    return { status: res.statusCode, headers: res.headers as TestResponse['headers'], text: res.body, json: <T>() => JSON.parse(res.body) as T };
  }
  // The lane takes only keys in the authenticator's cache: a GET through Fastify fills it.
  const filling = Date.now();
  await api.app.inject({ method: 'GET', url: '/v1/inventory/1', headers: { authorization: `Bearer ${api.keys.write}` } });
  const before = api.app.fastLane.answered;
  const res = await api.request({ method: 'PATCH', url: `/v1/inventory/${petId}`, key: api.keys.write, headers, body: { quantity } });
  // Fastify answers instead (by the same rules) only when the lookup aged out first, which a loaded machine can take between the two.
  const aged = Date.now() - filling >= KEY_CACHE_TTL_MS;
  assert.ok(api.app.fastLane.answered - before === 1 || aged, 'answered by the fast lane');
  return res;
}

for (const backend of BACKENDS) {
  describe(`Idempotency-Key limits over HTTP on ${backend}`, { skip: await backendSkip(backend) }, () => {
    for (const lane of ['fast lane', 'Fastify'] as const) {
      test(`${lane}: a key of 255 characters is taken, one of 256 is 400 invalid_parameter and changes nothing`, async (t) => {
        const api = await buildTestApp(t, { backend, transport: 'http', items: PETS });
        assert.equal((await patch(api, lane, 1, 3, 'k'.repeat(255))).status, 200);
        const refused = assertError(await patch(api, lane, 2, 4, 'k'.repeat(256)), 400, 'invalid_parameter');
        assert.match(refused.message, /Idempotency-Key must be 1 to 255/);
        assert.equal((await api.store.entries.getEntry(2n))?.item.quantity, 0);
      });

      test(`${lane}: past IDEMPOTENCY_RECORDS_PER_KEY live records a new key is 429 rate_limited with Retry-After; replays go on`, async (t) => {
        const api = await buildTestApp(t, { backend, transport: 'http', items: PETS, config: { IDEMPOTENCY_RECORDS_PER_KEY: '2' } });
        assert.equal((await patch(api, lane, 1, 1, 'sale-1')).status, 200);
        assert.equal((await patch(api, lane, 2, 2, 'sale-2')).status, 200);

        const res = await patch(api, lane, 3, 3, 'sale-3');
        const body = assertError(res, 429, 'rate_limited');
        assert.match(body.message, /holds 2 idempotency records/);
        const retryAfter = Number(res.headers['retry-after']);
        // Until sale-1's record expires: 24 h less the moments this test took (generous against a slow machine).
        assert.ok(Number.isInteger(retryAfter) && retryAfter <= IDEMPOTENCY_TTL_MS / 1000 && retryAfter > IDEMPOTENCY_TTL_MS / 1000 - 120, `Retry-After ${retryAfter}`);
        assert.equal((await api.store.entries.getEntry(3n))?.item.quantity, 0, 'nothing changed');

        const replay = await patch(api, lane, 1, 1, 'sale-1');
        assert.equal(replay.status, 200);
        assert.equal(replay.headers['idempotent-replayed'], 'true');
        assert.equal((await patch(api, lane, 3, 3)).status, 200, 'a PATCH without a key is not limited');
        // Not kept: the same request is refused again rather than replayed.
        assertError(await patch(api, lane, 4, 4, 'sale-3'), 429, 'rate_limited');
      });
    }
  });
}
