import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { describe, test } from 'node:test';
import { StoreUnavailableError } from '../../src/errors.js';
import type { InventoryItem } from '../../src/schemas/inventory.js';
import { assertError, buildTestApp, failingOn, type TestApp } from '../support/app.js';
import { waitFor } from '../support/process.js';

/**
 * What the log tells an operator (decisions 6.2): every line of a request carries its requestId,
 * the completion line its key's id once authenticated; a client that leaves mid-request is info,
 * a store outage one warn line per request without a stack, any other 5xx an error with its stack.
 */

const PETS: InventoryItem[] = [{ petId: 1n, quantity: 1, status: 'available' }];
const INFO = 30;
const WARN = 40;
const ERROR = 50;

type Line = Record<string, unknown>;

function linesOf(api: TestApp, requestId: string): Line[] {
  return api.logs().filter((l) => l.requestId === requestId);
}

/** A PATCH whose body stops after 5 bytes, then the client goes away. */
async function abandonedPatch(api: TestApp, requestId: string, chunked: boolean): Promise<void> {
  const socket = connect(Number(new URL(api.baseUrl).port), '127.0.0.1');
  await new Promise((done) => socket.on('connect', done));
  const framing = chunked ? 'Transfer-Encoding: chunked\r\n\r\n5\r\n{"qua' : 'Content-Length: 20\r\n\r\n{"qua';
  socket.write(
    `PATCH /v1/inventory/1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${api.keys.write}\r\nX-Request-Id: ${requestId}\r\nContent-Type: application/json\r\n${framing}`,
  );
  await waitFor(() => linesOf(api, requestId).some((l) => l.msg === 'incoming request'));
  socket.destroy();
}

describe('operator logs', () => {
  test('a client that disconnects mid-body is one info line, in either lane, never an error', async (t) => {
    const api = await buildTestApp(t, { transport: 'http', items: PETS });
    // Fill the key cache, so the lane takes the Content-Length request.
    await api.request({ method: 'GET', url: '/v1/inventory', key: api.keys.write });
    for (const [requestId, chunked] of [['gone-lane', false], ['gone-fastify', true]] as const) {
      await abandonedPatch(api, requestId, chunked);
      await waitFor(() => linesOf(api, requestId).length >= 2);
      const lines = linesOf(api, requestId);
      assert.deepEqual(
        lines.map((l) => [l.level, l.msg]),
        [
          [INFO, 'incoming request'],
          [INFO, 'client closed the connection before the request was complete'],
        ],
        requestId,
      );
      assert.equal(lines[1]!.keyId, (await api.store.keys.listApiKeys()).find((k) => k.scopes.includes('inventory:write'))!.id);
    }
    assert.equal(api.logs().filter((l) => Number(l.level) >= ERROR).length, 0);
    assert.equal((await api.store.entries.getEntry(1n))?.item.quantity, 1, 'nothing applied');
  });

  test('a store outage: each 503 is one warn line with the cause and no stack, in both lanes', async (t) => {
    const outage = new StoreUnavailableError('connection terminated unexpectedly');
    const api = await buildTestApp(t, { transport: 'http', items: PETS, wrapStore: (store) => failingOn(failingOn(store, 'applyChange', outage), 'ping', outage) });
    await api.request({ method: 'GET', url: '/v1/inventory', key: api.keys.write });
    // Over the socket (the lane), then through inject (Fastify's routes only).
    assertError(await api.request({ method: 'PATCH', url: '/v1/inventory/1', key: api.keys.write, body: { quantity: 2 }, headers: { 'x-request-id': 'out-1' } }), 503, 'service_unavailable');
    const full = await api.app.inject({
      method: 'PATCH',
      url: '/v1/inventory/1',
      headers: { authorization: `Bearer ${api.keys.write}`, 'content-type': 'application/json', 'x-request-id': 'out-2' },
      payload: '{"quantity":2}',
    });
    assert.equal(full.statusCode, 503);
    for (const requestId of ['out-1', 'out-2']) {
      const warned = linesOf(api, requestId).filter((l) => l.level === WARN);
      assert.equal(warned.length, 1, requestId);
      assert.equal(warned[0]!.cause, 'connection terminated unexpectedly');
      assert.equal(warned[0]!.err, undefined, 'no stack');
    }
    assertError(await api.request({ method: 'GET', url: '/readyz', headers: { 'x-request-id': 'ready-1' } }), 503, 'service_unavailable');
    assert.deepEqual(linesOf(api, 'ready-1').filter((l) => Number(l.level) >= WARN).map((l) => [l.level, l.msg, l.err]), [[WARN, 'store not reachable', undefined]]);
    assert.equal(api.logs().filter((l) => Number(l.level) >= ERROR).length, 0, 'no error lines');
  });

  test('any other 5xx stays an error line with its stack', async (t) => {
    const api = await buildTestApp(t, { transport: 'http', items: PETS, wrapStore: (store) => failingOn(store, 'getEntry', new Error('disk I/O error')) });
    assertError(await api.request({ method: 'GET', url: '/v1/inventory/1', key: api.keys.read, headers: { 'x-request-id': 'boom-1' } }), 500, 'internal_error');
    const errors = linesOf(api, 'boom-1').filter((l) => l.level === ERROR);
    assert.equal(errors.length, 1);
    assert.match(String((errors[0]!.err as { stack: string }).stack), /disk I\/O error/);
  });

  test('the completion line carries the key id once authenticated, never the key; every line of a request its requestId', async (t) => {
    const api = await buildTestApp(t, { transport: 'http', items: PETS });
    const [readKey] = (await api.store.keys.listApiKeys()).filter((k) => k.scopes.includes('inventory:read') && !k.scopes.includes('inventory:write'));
    for (let i = 0; i < 2; i++) await api.request({ method: 'GET', url: '/v1/inventory', key: api.keys.read, headers: { 'x-request-id': `keyed-${i}` } });
    await api.request({ method: 'GET', url: '/v1/inventory', key: `${api.keys.read}x`, headers: { 'x-request-id': 'nokey' } });
    for (const requestId of ['keyed-0', 'keyed-1']) {
      const completed = linesOf(api, requestId).find((l) => l.msg === 'request completed')!;
      assert.equal(completed.keyId, readKey!.id, requestId);
    }
    assert.equal(linesOf(api, 'nokey').find((l) => l.msg === 'request completed')!.keyId, undefined);
    const all = JSON.stringify(api.logs());
    assert.ok(!all.includes(api.keys.read) && !all.includes(api.keys.write), 'no key in the log');
    // Lines written while a request is handled, other than the server's own, are the request's.
    const requestLines = api.logs().filter((l) => ['incoming request', 'request completed', 'request failed', 'store unavailable'].includes(String(l.msg)));
    assert.ok(requestLines.every((l) => typeof l.requestId === 'string' && l.requestId !== ''));
  });
});
