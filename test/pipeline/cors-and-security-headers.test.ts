import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CORS_ALLOW_HEADERS, CORS_ALLOW_METHODS, CORS_EXPOSE_HEADERS, CORS_MAX_AGE_SECONDS } from '../../src/pipeline/cors.js';
import { JSON_CONTENT_SECURITY_POLICY, SECURITY_HEADERS } from '../../src/pipeline/pipeline.js';
import { request as httpRequest } from 'node:http';
import { assertError, buildTestApp, TRANSPORTS, type TestApp, type Transport } from '../support/app.js';

/** CORS (decisions 2.2, 6.4) and the security headers (6.1) on the answers only Fastify's routes give; test/http/fast-lane.test.ts holds both lanes to them. */

const ALLOWED = 'https://shop.example';
const PREFLIGHT = { origin: ALLOWED, 'access-control-request-method': 'PATCH', 'access-control-request-headers': 'authorization, content-type, if-match' };

/** A preflight is CORS's, not an operation of the document: sent without the contract check. */
async function preflight(api: TestApp, transport: Transport, url: string, headers: Record<string, string>): Promise<{ status: number; headers: Record<string, unknown>; text: string }> {
  if (transport === 'inject') {
    const res = await api.app.inject({ method: 'OPTIONS', url, headers });
    return { status: res.statusCode, headers: res.headers, text: res.body };
  }
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${api.baseUrl}${url}`, { method: 'OPTIONS', headers, agent: false }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
    });
    req.on('error', reject);
    req.end();
  });
}

for (const transport of TRANSPORTS) {
  test(`${transport}: a preflight from an allowed origin is 204 without a key, on any path`, async (t) => {
    const api = await buildTestApp(t, { transport, config: { CORS_ORIGINS: `${ALLOWED},http://localhost:3000` } });
    for (const url of ['/v1/inventory', '/v1/inventory/1', '/v1/inventory/1/history', '/nowhere']) {
      const res = await preflight(api, transport, url, PREFLIGHT);
      assert.equal(res.status, 204, url);
      assert.equal(res.text, '');
      assert.equal(res.headers['access-control-allow-origin'], ALLOWED);
      assert.equal(res.headers['access-control-allow-methods'], CORS_ALLOW_METHODS);
      assert.equal(res.headers['access-control-allow-headers'], CORS_ALLOW_HEADERS);
      assert.equal(res.headers['access-control-max-age'], String(CORS_MAX_AGE_SECONDS));
      assert.equal(res.headers.vary, 'Origin');
      assert.equal(res.headers['x-content-type-options'], 'nosniff');
      for (const name of ['authorization', 'content-type', 'if-match', 'idempotency-key', 'x-request-id']) {
        assert.ok(CORS_ALLOW_HEADERS.toLowerCase().split(', ').includes(name), name);
      }
    }
  });

  test(`${transport}: a preflight from another origin is an ordinary OPTIONS request: 401 first, no CORS headers`, async (t) => {
    const api = await buildTestApp(t, { transport, config: { CORS_ORIGINS: ALLOWED } });
    for (const origin of ['https://evil.example', 'https://shop.example:8443', 'http://shop.example']) {
      const res = await api.request({ method: 'OPTIONS', url: '/v1/inventory', headers: { ...PREFLIGHT, origin } });
      assertError(res, 401, 'unauthorized');
      assert.equal(res.headers['access-control-allow-origin'], undefined, origin);
      assert.equal(res.headers['access-control-allow-methods'], undefined, origin);
    }
    // With a key, OPTIONS is not a method of the API.
    const keyed = await api.request({ method: 'OPTIONS', url: '/v1/inventory', key: api.keys.read, headers: { ...PREFLIGHT, origin: 'https://evil.example' } });
    assertError(keyed, 405, 'method_not_allowed');
  });

  test(`${transport}: without CORS_ORIGINS there is no CORS at all`, async (t) => {
    const api = await buildTestApp(t, { transport });
    assertError(await api.request({ method: 'OPTIONS', url: '/v1/inventory', headers: PREFLIGHT }), 401, 'unauthorized');
    const res = await api.request({ method: 'GET', url: '/v1/inventory', key: api.keys.read, headers: { origin: ALLOWED } });
    assert.equal(res.status, 200);
    assert.equal(res.headers['access-control-allow-origin'], undefined);
    assert.equal(res.headers.vary, 'Accept-Encoding');
  });

  test(`${transport}: an allowed origin's answers from Fastify's routes carry the CORS headers, errors included`, async (t) => {
    const api = await buildTestApp(t, { transport, items: [{ petId: 1n, quantity: 1, status: 'available' }], config: { CORS_ORIGINS: ALLOWED } });
    const origin = { origin: ALLOWED };
    const cases = [
      { req: { method: 'GET', url: '/v1/inventory/1', key: api.keys.read, headers: origin }, status: 200 },
      { req: { method: 'GET', url: '/v1/inventory/1/history', key: api.keys.read, headers: origin }, status: 200 },
      { req: { method: 'GET', url: '/v1/inventory/1/history', headers: origin }, status: 401 },
      { req: { method: 'GET', url: '/nowhere', key: api.keys.read, headers: origin }, status: 404 },
      { req: { method: 'GET', url: '/v1/openapi.json', headers: origin }, status: 200 },
      { req: { method: 'GET', url: '/healthz', headers: origin }, status: 200 },
    ];
    for (const { req, status } of cases) {
      const res = await api.request(req);
      assert.equal(res.status, status, req.url);
      assert.equal(res.headers['access-control-allow-origin'], ALLOWED, req.url);
      assert.equal(res.headers['access-control-expose-headers'], CORS_EXPOSE_HEADERS, req.url);
      assert.match(String(res.headers.vary), /(^|, )Origin$/, req.url);
    }
  });

  test(`${transport}: security headers on every answer: health, the document, 401, 404, 405, 413`, async (t) => {
    const api = await buildTestApp(t, { transport, config: { BODY_LIMIT: '16' } });
    const cases = [
      { method: 'GET', url: '/healthz' },
      { method: 'GET', url: '/readyz' },
      { method: 'GET', url: '/v1/openapi.json' },
      { method: 'GET', url: '/v1/inventory' },
      { method: 'GET', url: '/nowhere', key: api.keys.read },
      { method: 'DELETE', url: '/v1/inventory', key: api.keys.read },
      { method: 'PATCH', url: '/v1/inventory/1', key: api.keys.write, body: { quantity: 1, reason: 'received-and-more' } },
    ];
    for (const req of cases) {
      const res = await api.request(req);
      for (const [name, value] of [...SECURITY_HEADERS, ['x-content-type-options', 'nosniff'], ['content-security-policy', JSON_CONTENT_SECURITY_POLICY]] as const) {
        assert.equal(res.headers[name], value, `${name} on ${req.method} ${req.url} (${res.status})`);
      }
    }
  });
}
