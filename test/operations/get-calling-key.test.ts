import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { issueApiKey } from '../../src/auth/issue-key.js';
import { StoreUnavailableError } from '../../src/errors.js';
import type { CallingKey } from '../../src/schemas/calling-key.js';
import { BACKENDS, backendSkip } from '../support/backends.js';
import { assertError, buildTestApp, failingOn, TRANSPORTS, type TestApp } from '../support/app.js';

/** GET /v1/key (getCallingKey): what the calling key is, so an app can tell a read-only key before its user tries to write. */

/** The stored record of one of the test app's two keys. */
async function recordOf(api: TestApp, scope: 'read' | 'write') {
  const record = (await api.store.keys.listApiKeys()).find((r) => r.name === `test inventory:${scope}`);
  assert.ok(record, `the ${scope} key's record`);
  return record;
}

for (const backend of BACKENDS) {
  const skip = await backendSkip(backend);
  for (const transport of TRANSPORTS) {
    describe(`getCallingKey on ${backend} over ${transport}`, { skip }, () => {
      test('200 describes the key: id, name, scopes as stored, expiresAt null; private, never the key or its hash', async (t) => {
        const api = await buildTestApp(t, { backend, transport });
        for (const scope of ['read', 'write'] as const) {
          const record = await recordOf(api, scope);
          const res = await api.request({ method: 'GET', url: '/v1/key', key: api.keys[scope] });
          assert.equal(res.status, 200);
          assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
          assert.equal(res.headers['cache-control'], 'private, no-cache');
          assert.deepEqual(res.json<CallingKey>(), { id: record.id, name: record.name, scopes: record.scopes, expiresAt: null });
          assert.deepEqual(Object.keys(res.json<object>()), ['id', 'name', 'scopes', 'expiresAt']);
          for (const secret of [api.keys[scope], api.keys[scope].slice(9), record.keyHash]) assert.ok(!res.text.includes(secret), 'no key material');
        }
        assert.deepEqual((await api.request({ method: 'GET', url: '/v1/key', key: api.keys.read })).json<CallingKey>().scopes, ['inventory:read']);
        assert.deepEqual((await api.request({ method: 'GET', url: '/v1/key', key: api.keys.write })).json<CallingKey>().scopes, ['inventory:write']);
      });

      test('a key with both scopes lists both; an expiring key gives its expiry in RFC 3339; HEAD answers without a body', async (t) => {
        const api = await buildTestApp(t, { backend, transport });
        const expiresAt = new Date(Date.now() + 86_400_000);
        const both = await issueApiKey(api.store.keys, { name: 'till 2', environment: api.config.environment, scopes: ['inventory:read', 'inventory:write'], expiresAt });
        const res = await api.request({ method: 'GET', url: '/v1/key', key: both.key });
        assert.equal(res.status, 200);
        assert.deepEqual(res.json<CallingKey>(), { id: both.record.id, name: 'till 2', scopes: ['inventory:read', 'inventory:write'], expiresAt: expiresAt.toISOString() });
        const head = await api.request({ method: 'HEAD', url: '/v1/key', key: both.key });
        assert.equal(head.status, 200);
        assert.equal(head.text, '');
      });

      test('401 unauthorized with WWW-Authenticate: no key, an unknown, expired or revoked key', async (t) => {
        const api = await buildTestApp(t, { backend, transport });
        const missing = await api.request({ method: 'GET', url: '/v1/key' });
        assertError(missing, 401, 'unauthorized');
        assert.equal(missing.headers['www-authenticate'], 'Bearer realm="inventory"');
        assert.equal(missing.headers['cache-control'], 'no-store');
        const expired = await issueApiKey(api.store.keys, { name: 'old', environment: api.config.environment, scopes: ['inventory:read'], expiresAt: new Date(Date.now() - 1000) });
        const revoked = await issueApiKey(api.store.keys, { name: 'gone', environment: api.config.environment, scopes: ['inventory:read'], expiresAt: null });
        await api.store.keys.revokeApiKey(revoked.record.id, new Date());
        for (const key of [`${api.keys.read}x`, expired.key, revoked.key]) {
          const res = await api.request({ method: 'GET', url: '/v1/key', key });
          assertError(res, 401, 'unauthorized');
          assert.equal(res.headers['www-authenticate'], 'Bearer realm="inventory", error="invalid_token"');
        }
      });

      test('400 invalid_parameter for a query parameter; 405 method_not_allowed with Allow for other methods, 401 first without a key', async (t) => {
        const api = await buildTestApp(t, { backend, transport });
        const query = await api.request({ method: 'GET', url: '/v1/key?verbose=1', key: api.keys.read });
        assert.equal(assertError(query, 400, 'invalid_parameter').message, 'Unknown query parameter "verbose": this operation takes none.');
        for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
          const res = await api.request({ method, url: '/v1/key', key: api.keys.write, body: {} });
          assertError(res, 405, 'method_not_allowed');
          assert.equal(res.headers.allow, 'GET, HEAD', method);
          assertError(await api.request({ method, url: '/v1/key', body: {} }), 401, 'unauthorized');
        }
      });

      test('429 rate_limited with Retry-After: the key\'s rate limit spent, and an address that failed authentication too often', async (t) => {
        const limited = await buildTestApp(t, { backend, transport, config: { RATE_LIMIT_PER_MINUTE: '1' } });
        assert.equal((await limited.request({ method: 'GET', url: '/v1/key', key: limited.keys.read })).status, 200);
        const spent = await limited.request({ method: 'GET', url: '/v1/key', key: limited.keys.read });
        assertError(spent, 429, 'rate_limited');
        assert.ok(Number(spent.headers['retry-after']) >= 1);
        const throttled = await buildTestApp(t, { backend, transport, config: { AUTH_FAILURES_PER_MINUTE: '1' } });
        assertError(await throttled.request({ method: 'GET', url: '/v1/key', key: 'inv_live_nope' }), 401, 'unauthorized');
        const refused = await throttled.request({ method: 'GET', url: '/v1/key', key: throttled.keys.read });
        assertError(refused, 429, 'rate_limited');
        assert.ok(Number(refused.headers['retry-after']) >= 1);
      });

      test('500 internal_error when the key lookup fails unexpectedly; 503 service_unavailable with Retry-After when the store is unreachable', async (t) => {
        const broken = await buildTestApp(t, { backend, transport, wrapStore: (s) => failingOn(s, 'findApiKeyByHash', new Error('SQLITE_CORRUPT at /srv/data/inventory.db')) });
        const failed = await broken.request({ method: 'GET', url: '/v1/key', key: broken.keys.read });
        assert.doesNotMatch(assertError(failed, 500, 'internal_error').message, /SQLITE|\/srv/);
        const down = await buildTestApp(t, { backend, transport, wrapStore: (s) => failingOn(s, 'findApiKeyByHash', new StoreUnavailableError('down')) });
        const unavailable = await down.request({ method: 'GET', url: '/v1/key', key: down.keys.read });
        assertError(unavailable, 503, 'service_unavailable');
        assert.equal(unavailable.headers['retry-after'], '1');
      });
    });
  }
}
