import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { BACKENDS, backendSkip } from '../support/backends.js';
import { assertError, buildTestApp, failingOn, TRANSPORTS } from '../support/app.js';
import { patch } from '../support/requests.js';
import { PETS_OF_EACH_STATUS } from '../support/pets.js';
import { OPERATIONS } from '../../src/operations/index.js';


for (const backend of BACKENDS) {
  const skip = await backendSkip(backend);
  for (const transport of TRANSPORTS) {
    describe(`API on ${backend} over ${transport}`, { skip }, () => {
      describe('HTTP behaviour (decisions 4, 6)', () => {
        test('404 not_found in the Error shape for an unknown route', async (t) => {
          const api = await buildTestApp(t, { backend, transport });
          for (const url of ['/v1/pets/1', '/v2/inventory', '/v1', '/v1/inventory/1/history', '/v1/inventory/1/']) {
            assertError(await api.request({ method: 'GET', url, key: api.keys.read }), 404, 'not_found');
          }
        });

        test('the 404 for an unknown path names every operation of the service, method and path', async (t) => {
          const api = await buildTestApp(t, { backend, transport });
          const { message } = assertError(await api.request({ method: 'GET', url: '/v1/pets/1', key: api.keys.read }), 404, 'not_found');
          assert.ok(OPERATIONS.length > 2);
          assert.deepEqual(
            OPERATIONS.map((op) => `${op.method} ${op.path}`).filter((operation) => !message.includes(`${operation},`) && !message.endsWith(`${operation}.`)),
            [],
            `operations the message leaves out: ${message}`,
          );
        });

        test('405 method_not_allowed with an Allow header, before the body is read (decisions 4.1)', async (t) => {
          const api = await buildTestApp(t, { backend, transport, items: PETS_OF_EACH_STATUS });
          const cases: [string, string, string][] = [
            ['POST', '/v1/inventory', 'GET, HEAD'],
            ['DELETE', '/v1/inventory', 'GET, HEAD'],
            ['PUT', '/v1/inventory/1', 'GET, HEAD, PATCH'],
            ['POST', '/v1/inventory/1', 'GET, HEAD, PATCH'],
            ['DELETE', '/v1/inventory/1', 'GET, HEAD, PATCH'],
            ['PATCH', '/v1/inventory', 'GET, HEAD'],
            ['POST', '/healthz', 'GET, HEAD'],
            ['OPTIONS', '/v1/inventory', 'GET, HEAD'],
            ['QUERY', '/v1/inventory', 'GET, HEAD'],
            ['TRACE', '/v1/inventory/1', 'GET, HEAD, PATCH'],
            ['POST', '/v1/events', 'GET, HEAD'],
            ['DELETE', '/v1/events/stream', 'GET, HEAD'],
          ];
          for (const [method, url, allow] of cases) {
            const body = method === 'GET' || method === 'TRACE' ? undefined : 'not json';
            const res = await api.request({ method, url, key: api.keys.write, headers: body ? { 'content-type': 'text/plain' } : {}, body });
            assertError(res, 405, 'method_not_allowed');
            assert.equal(res.headers.allow, allow, `${method} ${url}`);
          }
          // QUERY without Content-Type: 405 where the path has routes, 415 elsewhere (found by the fuzzer as a 500).
          assertError(await api.request({ method: 'QUERY', url: '/v1/inventory', key: api.keys.write }), 405, 'method_not_allowed');
          assertError(await api.request({ method: 'QUERY', url: '/v1/nothing-here', key: api.keys.write }), 415, 'unsupported_media_type');
          assertError(await api.request({ method: 'QUERY', url: '/v1/nothing-here' }), 401, 'unauthorized');
        });

        test('X-Request-Id: a sane client id is echoed, anything else replaced; logs carry it (decisions 6.2)', async (t) => {
          const api = await buildTestApp(t, { backend, transport, items: PETS_OF_EACH_STATUS });
          const echoed = await api.request({ method: 'GET', url: '/v1/inventory', key: api.keys.read, headers: { 'x-request-id': 'pos-42.a:b' } });
          assert.equal(echoed.headers['x-request-id'], 'pos-42.a:b');
          for (const insane of ['has space', 'x'.repeat(200), 'quote"s']) {
            const res = await api.request({ method: 'GET', url: '/v1/inventory', key: api.keys.read, headers: { 'x-request-id': insane } });
            assert.match(String(res.headers['x-request-id']), /^[0-9a-f-]{36}$/);
          }
          const err = await api.request({ method: 'GET', url: '/v1/inventory', headers: { 'x-request-id': 'err-1' } });
          assert.equal(err.headers['x-request-id'], 'err-1');
          const lines = api.logs().filter((l) => l.requestId === 'pos-42.a:b');
          assert.ok(lines.length >= 2, 'the incoming and completed lines');
          assert.ok(api.logs().filter((l) => l.req || l.res).every((l) => typeof l.requestId === 'string'));
        });

        test('Cache-Control: private on authenticated answers, no-store on errors (decisions 6.1)', async (t) => {
          const api = await buildTestApp(t, { backend, transport, items: PETS_OF_EACH_STATUS });
          const ok = await api.request({ method: 'GET', url: '/v1/inventory', key: api.keys.read });
          assert.equal(ok.headers['cache-control'], 'private, no-cache');
          assert.equal((await patch(api, '1', { quantity: 3 })).headers['cache-control'], 'private, no-cache');
          assert.equal((await api.request({ method: 'GET', url: '/v1/inventory' })).headers['cache-control'], 'no-store');
          assert.equal(ok.headers['x-content-type-options'], 'nosniff');
        });

        test('500 internal_error is generic: no stack, SQL or path; the log has the details and request id (decisions 4.3)', async (t) => {
          const api = await buildTestApp(t, {
            backend,
            transport,
            // changesSince: every GET of the list asks the store for what changed (src/cache/list-cache.ts).
            wrapStore: (store) => failingOn(store, 'changesSince', new Error('SQLITE_CORRUPT near "SELECT pet_id FROM inventory" at /srv/data/inventory.db')),
          });
          const res = await api.request({ method: 'GET', url: '/v1/inventory', key: api.keys.read, headers: { 'x-request-id': 'boom-1' } });
          const body = assertError(res, 500, 'internal_error');
          assert.doesNotMatch(body.message, /SELECT|SQLITE|\/srv|at /);
          const logged = api.logs().find((l) => l.requestId === 'boom-1' && l.level === 50);
          assert.ok(logged && JSON.stringify(logged).includes('SQLITE_CORRUPT'), 'details go to the log');
        });

        test('503 service_unavailable when the store is unreachable; /readyz says so too (decisions 6.3)', async (t) => {
          const api = await buildTestApp(t, { backend, transport, items: PETS_OF_EACH_STATUS });
          assert.deepEqual((await api.request({ method: 'GET', url: '/readyz' })).json(), { status: 'ready' });
          // Authenticate once so the key is cached, then take the store away.
          await api.request({ method: 'GET', url: '/v1/inventory', key: api.keys.read });
          await api.store.close();
          const res = await api.request({ method: 'GET', url: '/v1/inventory', key: api.keys.read });
          assertError(res, 503, 'service_unavailable');
          assert.equal(res.headers['retry-after'], '1');
          assertError(await api.request({ method: 'GET', url: '/readyz' }), 503, 'service_unavailable');
          assert.deepEqual((await api.request({ method: 'GET', url: '/healthz' })).json(), { status: 'ok' });
        });

        test('/healthz, /readyz and /v1/openapi.json need no key', async (t) => {
          const api = await buildTestApp(t, { backend, transport });
          for (const url of ['/healthz', '/readyz', '/v1/openapi.json']) {
            assert.equal((await api.request({ method: 'GET', url })).status, 200, url);
          }
        });
      });
    });
  }
}
