import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DISABLED_BY_OPERATOR } from '../../src/domain/webhook.js';
import { StoreUnavailableError } from '../../src/errors.js';
import { assertError, buildTestApp, failingOn, makeKey, type TestApp } from '../support/app.js';
import { BACKENDS, backendSkip } from '../support/backends.js';
import { PET_1_AND_INT64_MAX } from '../support/pets.js';
import { patch } from '../support/requests.js';

/** GET /v1/webhooks: the endpoints' state for a key with webhooks:manage, never a secret; every error path. */

const FIELDS = ['id', 'url', 'description', 'enabled', 'disabledReason', 'deliveredSeq', 'backlog', 'maxInFlight', 'failures', 'retrying', 'nextAttemptAt', 'lastFailureAt', 'lastFailure', 'createdAt'];
/** The two endpoints' first secrets and the one that replaces the second's. */
const SECRETS = [1, 2, 3].map((byte) => `whsec_${Buffer.alloc(32, byte).toString('base64')}`);

async function withEndpoints(api: TestApp): Promise<void> {
  await api.store.webhookEndpoints.addEndpoint({ id: 'whk_till', url: 'https://till.example/hook', description: 'the till', secret: SECRETS[0]!, createdAt: new Date('2026-01-02T03:04:05.000Z') });
  await api.store.webhookEndpoints.addEndpoint({ id: 'whk_shop', url: 'https://shop.example/hook', description: null, secret: SECRETS[1]!, createdAt: new Date('2026-01-03T00:00:00.000Z') });
  // The previous secret is kept beside the new one: it must not show either.
  await api.store.webhookEndpoints.rotateSecret('whk_shop', SECRETS[2]!, new Date(Date.now() + 86_400_000));
}

for (const backend of BACKENDS) {
  describe(`GET /v1/webhooks on ${backend}`, { skip: await backendSkip(backend) }, () => {
    test('a key with webhooks:manage gets every endpoint, oldest first, with its backlog against the head; no secret', async (t) => {
      // The endpoints as the store holds them: no dispatcher trying their hosts meanwhile.
      const api = await buildTestApp(t, { backend, items: PET_1_AND_INT64_MAX, delivering: false });
      const key = await makeKey(api.store, api.config.environment, ['webhooks:manage']);
      const empty = await api.request({ method: 'GET', url: '/v1/webhooks', key });
      assert.equal(empty.status, 200);
      assert.match(String(empty.headers['content-type']), /^application\/json/);
      const head = (empty.json<{ head: number }>()).head;
      assert.deepEqual(empty.json(), { items: [], head });

      await withEndpoints(api);
      await patch(api, '1', { quantity: 4 });
      await patch(api, '1', { quantity: 5 });
      await api.store.webhookEndpoints.disableEndpoint('whk_shop', DISABLED_BY_OPERATOR);

      const res = await api.request({ method: 'GET', url: '/v1/webhooks', key });
      assert.equal(res.status, 200);
      const body = res.json<{ items: Record<string, unknown>[]; head: number }>();
      assert.deepEqual(Object.keys(body), ['items', 'head']);
      assert.equal(body.head, head + 2);
      for (const item of body.items) assert.deepEqual(Object.keys(item), FIELDS);
      assert.deepEqual(body.items[0], {
        id: 'whk_till',
        url: 'https://till.example/hook',
        description: 'the till',
        enabled: true,
        disabledReason: null,
        deliveredSeq: head,
        backlog: 2,
        maxInFlight: 16,
        failures: 0,
        retrying: 0,
        nextAttemptAt: null,
        lastFailureAt: null,
        lastFailure: null,
        createdAt: '2026-01-02T03:04:05.000Z',
      });
      assert.deepEqual([body.items[1]!.id, body.items[1]!.enabled, body.items[1]!.disabledReason, body.items[1]!.backlog], ['whk_shop', false, DISABLED_BY_OPERATOR, 2]);
      for (const secret of SECRETS) assert.ok(!res.text.includes(secret) && !res.text.includes(secret.slice(6)), 'no secret, current or previous');
      assert.doesNotMatch(res.text, /whsec_|secret/i);
    });

    test('401 without a key or with a bad one; 403 forbidden for keys without webhooks:manage; 400 for any query parameter', async (t) => {
      const api = await buildTestApp(t, { backend });
      await withEndpoints(api);
      const none = assertError(await api.request({ method: 'GET', url: '/v1/webhooks' }), 401, 'unauthorized');
      assertError(await api.request({ method: 'GET', url: '/v1/webhooks', key: 'inv_live_not-a-key' }), 401, 'unauthorized');
      for (const key of [api.keys.read, api.keys.write]) {
        const refused = await api.request({ method: 'GET', url: '/v1/webhooks', key });
        assertError(refused, 403, 'forbidden');
        assert.doesNotMatch(refused.text, /whk_|whsec_/, 'nothing of the endpoints');
      }
      assert.doesNotMatch(JSON.stringify(none), /whk_|whsec_/);
      const key = await makeKey(api.store, api.config.environment, ['webhooks:manage']);
      assertError(await api.request({ method: 'GET', url: '/v1/webhooks?limit=5', key }), 400, 'invalid_parameter');
      // Authentication first: a bad parameter without a key is 401.
      assertError(await api.request({ method: 'GET', url: '/v1/webhooks?limit=5' }), 401, 'unauthorized');
    });

    test('405 method_not_allowed with Allow: GET, HEAD for every other method', async (t) => {
      const api = await buildTestApp(t, { backend });
      const key = await makeKey(api.store, api.config.environment, ['webhooks:manage']);
      for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
        const res = await api.request({ method, url: '/v1/webhooks', key, headers: { 'content-type': 'application/json' }, body: '{"url":"https://x.example"}' });
        assertError(res, 405, 'method_not_allowed');
        assert.equal(res.headers.allow, 'GET, HEAD', method);
      }
    });

    test('503 service_unavailable when the store is down, 500 internal_error (saying nothing of it) when it fails', async (t) => {
      const down = await buildTestApp(t, { backend, wrapStore: (store) => failingOn(store, 'listEndpoints', new StoreUnavailableError('down')) });
      const downKey = await makeKey(down.store, down.config.environment, ['webhooks:manage']);
      assertError(await down.request({ method: 'GET', url: '/v1/webhooks', key: downKey }), 503, 'service_unavailable');
      const broken = await buildTestApp(t, { backend, wrapStore: (store) => failingOn(store, 'listEndpoints', new Error('SQLITE_CORRUPT in webhook_endpoints')) });
      const brokenKey = await makeKey(broken.store, broken.config.environment, ['webhooks:manage']);
      const failed = assertError(await broken.request({ method: 'GET', url: '/v1/webhooks', key: brokenKey }), 500, 'internal_error');
      assert.doesNotMatch(failed.message, /SQLITE|webhook_endpoints/);
    });

    test('429 rate_limited past the key\'s requests per minute', async (t) => {
      const api = await buildTestApp(t, { backend, config: { RATE_LIMIT_PER_MINUTE: '2' } });
      const key = await makeKey(api.store, api.config.environment, ['webhooks:manage']);
      for (let i = 0; i < 2; i++) assert.equal((await api.request({ method: 'GET', url: '/v1/webhooks', key })).status, 200);
      const limited = await api.request({ method: 'GET', url: '/v1/webhooks', key });
      assertError(limited, 429, 'rate_limited');
      assert.match(String(limited.headers['retry-after']), /^\d+$/);
    });
  });
}
