import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { AUTH_MESSAGES } from '../../src/auth/authenticator.js';
import { generateApiKey, hashKey, KEY_PREFIX } from '../../src/domain/api-key.js';
import { BACKENDS, backendSkip } from '../support/backends.js';
import { assertError, buildTestApp, makeKey, TRANSPORTS } from '../support/app.js';
import { itemOf } from '../support/store.js';
import { patch } from '../support/requests.js';
import { PETS_OF_EACH_STATUS } from '../support/pets.js';


for (const backend of BACKENDS) {
  const skip = await backendSkip(backend);
  for (const transport of TRANSPORTS) {
    describe(`API on ${backend} over ${transport}`, { skip }, () => {
      describe('authentication (decisions 2)', () => {
        test('401 without credentials, with WWW-Authenticate and no error attribute (decisions 2.3)', async (t) => {
          const api = await buildTestApp(t, { backend, transport, items: PETS_OF_EACH_STATUS });
          const res = await api.request({ method: 'GET', url: '/v1/inventory' });
          assert.equal(assertError(res, 401, 'unauthorized').message, AUTH_MESSAGES.missing);
          assert.equal(res.headers['www-authenticate'], 'Bearer realm="inventory"');
        });

        test('401 for another scheme, an empty token or an unknown key', async (t) => {
          const api = await buildTestApp(t, { backend, transport, items: PETS_OF_EACH_STATUS });
          const cases: [string, string, string][] = [
            [`Basic ${Buffer.from('a:b').toString('base64')}`, AUTH_MESSAGES.scheme, 'Bearer realm="inventory"'],
            ['Bearer', AUTH_MESSAGES.missing, 'Bearer realm="inventory"'],
            ['Bearer    ', AUTH_MESSAGES.missing, 'Bearer realm="inventory"'],
            [`Bearer ${KEY_PREFIX.production}nope`, AUTH_MESSAGES.invalid, 'Bearer realm="inventory", error="invalid_token"'],
            [`Bearer ${generateApiKey({ name: 'x', environment: 'production', scopes: ['inventory:write'], expiresAt: null }).key}`, AUTH_MESSAGES.invalid, 'Bearer realm="inventory", error="invalid_token"'],
            [`Bearer ${api.keys.write}x`, AUTH_MESSAGES.invalid, 'Bearer realm="inventory", error="invalid_token"'],
          ];
          for (const [authorization, message, challenge] of cases) {
            const res = await api.request({ method: 'GET', url: '/v1/inventory', headers: { authorization } });
            assert.equal(assertError(res, 401, 'unauthorized').message, message, authorization);
            assert.equal(res.headers['www-authenticate'], challenge, authorization);
          }
        });

        test('the scheme word is case-insensitive (decisions 2.1)', async (t) => {
          const api = await buildTestApp(t, { backend, transport, items: PETS_OF_EACH_STATUS });
          for (const scheme of ['bearer', 'BEARER', 'BeArEr']) {
            const res = await api.request({ method: 'GET', url: '/v1/inventory', headers: { authorization: `${scheme} ${api.keys.read}` } });
            assert.equal(res.status, 200, scheme);
          }
        });

        test('401 for a revoked key, at once on this instance (decisions 2.6)', async (t) => {
          const api = await buildTestApp(t, { backend, transport, items: PETS_OF_EACH_STATUS });
          const key = await makeKey(api.store, 'production', ['inventory:read']);
          const record = (await api.store.keys.findApiKeyByHash(hashKey(key)))!;
          await api.store.keys.revokeApiKey(record.id, new Date());
          const res = await api.request({ method: 'GET', url: '/v1/inventory', key });
          assert.equal(assertError(res, 401, 'unauthorized').message, AUTH_MESSAGES.revoked);
        });

        test('401 for an expired key', async (t) => {
          const api = await buildTestApp(t, { backend, transport, items: PETS_OF_EACH_STATUS });
          const key = await makeKey(api.store, 'production', ['inventory:read'], new Date(Date.now() - 1000));
          const res = await api.request({ method: 'GET', url: '/v1/inventory', key });
          assert.equal(assertError(res, 401, 'unauthorized').message, AUTH_MESSAGES.expired);
        });

        test('a key of the other environment is refused by its prefix (decisions 2.4)', async (t) => {
          const api = await buildTestApp(t, { backend, transport, items: PETS_OF_EACH_STATUS });
          const staging = await makeKey(api.store, 'staging', ['inventory:write']);
          assert.ok(staging.startsWith(KEY_PREFIX.staging));
          const res = await api.request({ method: 'GET', url: '/v1/inventory', key: staging });
          assert.match(assertError(res, 401, 'unauthorized').message, /production keys/);
          const stagingApi = await buildTestApp(t, { backend, transport, items: PETS_OF_EACH_STATUS, config: { INVENTORY_ENV: 'staging' } });
          const stagingKey = await makeKey(stagingApi.store, 'staging', ['inventory:read']);
          assert.equal((await stagingApi.request({ method: 'GET', url: '/v1/inventory', key: stagingKey })).status, 200);
          assertError(await stagingApi.request({ method: 'GET', url: '/v1/inventory', key: stagingApi.keys.read.replace(KEY_PREFIX.staging, KEY_PREFIX.production) }), 401, 'unauthorized');
        });

        test('403 forbidden when a read key PATCHes; read keys still GET (decisions 2.5)', async (t) => {
          const api = await buildTestApp(t, { backend, transport, items: PETS_OF_EACH_STATUS });
          const res = await patch(api, '1', { quantity: 5 }, { key: api.keys.read });
          assert.match(assertError(res, 403, 'forbidden').message, /inventory:write/);
          assert.equal((await itemOf(api.store, 1n))?.quantity, 12);
          // Scope is checked before the body: even a broken body gets 403.
          assertError(await patch(api, 'x', '{', { key: api.keys.read }), 403, 'forbidden');
        });

        test('authentication runs before everything else: no 400, 404, 405, 413 or 415 without a key (decisions 2.2)', async (t) => {
          const api = await buildTestApp(t, { backend, transport, items: PETS_OF_EACH_STATUS, config: { BODY_LIMIT: '32' } });
          const unauthenticated = [
            { method: 'PATCH', url: '/v1/inventory/abc', body: '{"quantity":1}', headers: { 'content-type': 'application/json' } },
            { method: 'PATCH', url: '/v1/inventory/99', body: '{"quantity":1}', headers: { 'content-type': 'application/json' } },
            { method: 'PATCH', url: '/v1/inventory/1', body: '{', headers: { 'content-type': 'application/json' } },
            { method: 'PATCH', url: '/v1/inventory/1', body: 'x'.repeat(1000), headers: { 'content-type': 'application/json' } },
            { method: 'PATCH', url: '/v1/inventory/1', body: 'x', headers: { 'content-type': 'text/plain' } },
            { method: 'DELETE', url: '/v1/inventory/1' },
            { method: 'POST', url: '/v1/inventory', body: 'x', headers: { 'content-type': 'text/plain' } },
            { method: 'GET', url: '/v1/nothing-here' },
            { method: 'GET', url: '/v1/inventory?bad=1' },
            { method: 'GET', url: '/v1/inventory/%zz' },
            { method: 'POST', url: '/healthz' },
          ];
          for (const req of unauthenticated) {
            for (const authorization of [undefined, 'Bearer wrong']) {
              const res = await api.request({ ...req, headers: { ...req.headers, ...(authorization ? { authorization } : {}) } });
              assertError(res, 401, 'unauthorized');
              assert.ok(String(res.headers['www-authenticate']).startsWith('Bearer realm="inventory"'));
            }
          }
        });

        test('429 rate_limited with Retry-After once an address fails too often (decisions 2.7), valid keys included', async (t) => {
          const api = await buildTestApp(t, { backend, transport, items: PETS_OF_EACH_STATUS, config: { AUTH_FAILURES_PER_MINUTE: '3' } });
          for (let i = 0; i < 3; i++) assertError(await api.request({ method: 'GET', url: '/v1/inventory', key: 'wrong' }), 401, 'unauthorized');
          const res = await api.request({ method: 'GET', url: '/v1/inventory', key: api.keys.read });
          assertError(res, 429, 'rate_limited');
          const retryAfter = Number(res.headers['retry-after']);
          assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
          // Public routes stay reachable for health checks.
          assert.equal((await api.request({ method: 'GET', url: '/healthz' })).status, 200);
        });

        test('the key never appears in logs or error messages (decisions 2.7)', async (t) => {
          const api = await buildTestApp(t, { backend, transport, items: PETS_OF_EACH_STATUS });
          await api.request({ method: 'GET', url: '/v1/inventory', key: api.keys.read });
          const bad = `${api.keys.write}zz`;
          const res = await api.request({ method: 'GET', url: '/v1/inventory', key: bad });
          assert.ok(!res.text.includes(bad.slice(9, 30)));
          const logText = JSON.stringify(api.logs());
          assert.ok(!logText.includes(api.keys.read.slice(9)), 'read key in logs');
          assert.ok(!logText.includes(bad.slice(9)), 'presented key in logs');
        });
      });
    });
  }
}
