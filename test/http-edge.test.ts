import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { describe, test } from 'node:test';
import { BACKENDS, backendSkip } from './backends.js';
import { buildTestApp } from './helper.js';

/** Writes raw bytes to a listening app and resolves with everything it answered. */
async function raw(port: number, chunks: string[], pauseMs = 0): Promise<string> {
  const socket = connect(port, '127.0.0.1');
  let answer = '';
  socket.on('data', (c: Buffer) => (answer += c.toString()));
  const closed = new Promise((done) => socket.on('close', done));
  socket.on('error', () => undefined);
  await new Promise((done) => socket.on('connect', done));
  for (const chunk of chunks) {
    socket.write(chunk);
    if (pauseMs) await new Promise((done) => setTimeout(done, pauseMs));
  }
  await closed;
  return answer;
}

function errorBody(answer: string): { code: string; message: string; status: number } {
  return JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as { code: string; message: string; status: number };
}

for (const backend of BACKENDS) {
  describe(`HTTP edge cases on ${backend}`, { skip: await backendSkip(backend) }, () => {
    test('a request that does not arrive in time gets 408 request_timeout in the Error shape', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', config: { REQUEST_TIMEOUT_MS: '300' } });
      const { port } = api.app.server.address() as AddressInfo;
      const started = Date.now();
      const answer = await raw(port, ['GET /v1/inventory HTTP/1.1\r\nHost: x\r\n']);
      assert.match(answer, /^HTTP\/1\.1 408 /);
      assert.match(answer, /content-type: application\/json; charset=utf-8/i);
      assert.match(answer, /x-request-id: \S+/i);
      assert.deepEqual(errorBody(answer), { code: 'request_timeout', message: errorBody(answer).message, status: 408 });
      assert.ok(Date.now() - started < 5000, 'answered near the configured limit, not Node\'s 30 s check');
    });

    test('bytes that are not HTTP get 400 bad_request in the Error shape', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http' });
      const { port } = api.app.server.address() as AddressInfo;
      const answer = await raw(port, ['HELLO THERE\r\n\r\n']);
      assert.match(answer, /^HTTP\/1\.1 400 /);
      assert.match(answer, /\r\nX-Content-Type-Options: nosniff\r\n/i, 'every answer carries nosniff');
      const body = errorBody(answer);
      assert.equal(body.code, 'bad_request');
      assert.equal(body.status, 400);
    });

    test('a body sent slowly within the limit still succeeds', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: [{ petId: 1n, quantity: 1, status: 'available' }], config: { REQUEST_TIMEOUT_MS: '3000' } });
      const { port } = api.app.server.address() as AddressInfo;
      const body = '{"quantity":9}';
      const head = `PATCH /v1/inventory/1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${api.keys.write}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`;
      const answer = await raw(port, [head, body.slice(0, 4), body.slice(4)], 100);
      assert.match(answer, /^HTTP\/1\.1 200 /);
      assert.match(answer, /\{"petId":1,"quantity":9,"status":"available"\}$/);
    });
  });
}
