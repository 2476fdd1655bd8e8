import assert from 'node:assert/strict';
import { request } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { test } from 'node:test';
import { MAX_PIPELINED } from '../../src/http/connections.js';
import { buildTestApp } from '../support/app.js';
import { sleep, waitFor, withDeadline } from '../support/process.js';
import { byScale } from '../support/scale.js';

/**
 * Slow and flooding clients (decisions 7.3, 7.4): stalled headers, stalled bodies, oversized
 * headers and a flood of idle keep-alive connections beyond MAX_CONNECTIONS, all at once, while a
 * normal client keeps getting its answers. What the store holds does not matter here: SQLite.
 */

const MAX_CONNECTIONS = byScale(40, 400);
const FLOOD = byScale(160, 2000);
const STALLED = byScale(8, 60);
const TIMEOUT_MS = 800;

interface Attacker {
  socket: Socket;
  answer: string;
  /** Resolves with how long the connection lived, in ms. */
  closed: Promise<number>;
}

async function open(port: number, bytes: string): Promise<Attacker> {
  const socket = connect(port, '127.0.0.1');
  const openedAt = Date.now();
  const attacker: Attacker = { socket, answer: '', closed: new Promise((done) => socket.on('close', () => done(Date.now() - openedAt))) };
  socket.on('data', (c: Buffer) => (attacker.answer += c.toString('latin1')));
  socket.on('error', () => undefined);
  await new Promise((done) => socket.once('connect', done));
  socket.write(bytes);
  return attacker;
}

/** A GET on a connection of its own, as a new client would: its status (0 when it failed). */
function normalGet(port: number, key: string): Promise<number> {
  return new Promise((done) => {
    const req = request({ host: '127.0.0.1', port, path: '/v1/inventory', headers: { authorization: `Bearer ${key}` }, agent: false }, (res) => {
      res.resume();
      res.on('end', () => done(res.statusCode ?? 0));
    });
    req.on('error', () => done(0));
    req.end();
  });
}

test('slow and flooding clients: a normal client keeps getting answers throughout', async (t) => {
  const api = await buildTestApp(t, {
    transport: 'http',
    items: [{ petId: 1n, quantity: 1, status: 'available' }],
    config: { MAX_CONNECTIONS: String(MAX_CONNECTIONS), REQUEST_TIMEOUT_MS: String(TIMEOUT_MS), LOG_LEVEL: 'warn' },
  });
  const { port } = api.app.server.address() as AddressInfo;
  const auth = `Authorization: Bearer ${api.keys.read}\r\n`;

  // The normal client: one GET after another, each on a new connection, for the whole run (ended however the test ends).
  const statuses: number[] = [];
  let attacking = true;
  t.after(() => (attacking = false));
  const normal = (async () => {
    while (attacking) {
      statuses.push(await normalGet(port, api.keys.read));
      await sleep(20);
    }
  })();

  const stalledHeaders = await Promise.all(Array.from({ length: STALLED }, () => open(port, `GET /v1/inventory HTTP/1.1\r\nHost: x\r\n${auth}`)));
  const stalledBodies = await Promise.all(
    Array.from({ length: STALLED }, () =>
      open(port, `PATCH /v1/inventory/1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${api.keys.write}\r\nContent-Type: application/json\r\nContent-Length: 20\r\n\r\n{"qua`),
    ),
  );
  const oversized = await Promise.all(Array.from({ length: STALLED }, () => open(port, `GET /v1/inventory HTTP/1.1\r\nHost: x\r\n${auth}X-Big: ${'a'.repeat(20_000)}\r\n\r\n`)));
  // The flood: keep-alive connections that each send one GET, get its answer, then stay open and idle. (Sent without
  // waiting for the answer, a connection could meet the cap before the server read its request, and be refused: 7.4.)
  const flood: Attacker[] = [];
  for (let i = 0; i < FLOOD; i++) {
    const attacker = await open(port, `GET /v1/inventory HTTP/1.1\r\nHost: x\r\n${auth}\r\n`);
    flood.push(attacker);
    await waitFor(() => attacker.answer.length > 0 || attacker.socket.destroyed, 10_000);
    assert.ok(api.app.connections.size <= MAX_CONNECTIONS, `${api.app.connections.size} open connections, cap ${MAX_CONNECTIONS}`);
  }

  // Slow clients are cut by the request timeout, with 408 in the Error shape (Node alone would hold them for 60 s and more).
  const slow = withDeadline(Promise.all([...stalledHeaders, ...stalledBodies].map((a) => a.closed)), 10_000, `slow clients still connected (REQUEST_TIMEOUT_MS=${TIMEOUT_MS})`);
  const slowMs = Math.max(...(await slow));
  for (const a of stalledBodies) assert.match(a.answer, /^HTTP\/1\.1 408 [^]*"code":"request_timeout"/);
  // A stalled header may be closed to admit a flood connection before its timeout: closed either way, answered 408 if it lived that long.
  for (const a of stalledHeaders) assert.ok(a.answer === '' || /^HTTP\/1\.1 408 [^]*"code":"request_timeout"/.test(a.answer), a.answer);
  await Promise.all(oversized.map((a) => a.closed));
  for (const a of oversized) assert.match(a.answer, /^HTTP\/1\.1 431 [^]*"code":"headers_too_large"/);

  // The flood: the oldest idle connections were closed to admit new ones; every one got its 200 first.
  await waitFor(() => flood.filter((a) => a.socket.destroyed).length >= FLOOD - MAX_CONNECTIONS, 10_000);
  for (const a of flood) assert.match(a.answer, /^HTTP\/1\.1 200 /);
  assert.ok(api.app.connections.size <= MAX_CONNECTIONS);
  const stillOpen = flood.filter((a) => !a.socket.destroyed).length;

  attacking = false;
  await normal;
  t.diagnostic(`normal client: ${statuses.length} GETs during the attack; flood ${FLOOD} over a cap of ${MAX_CONNECTIONS}, ${stillOpen} still open; slow clients cut after ${slowMs} ms`);
  assert.ok(statuses.length >= 3, 'the normal client got going');
  assert.deepEqual([...new Set(statuses)], [200], `normal client statuses: ${statuses.join(',')}`);
  for (const a of flood) a.socket.destroy();
});

test('at the cap with every connection busy, a new one gets 503 service_unavailable with Retry-After, and is closed', async (t) => {
  const api = await buildTestApp(t, {
    transport: 'http',
    items: [{ petId: 1n, quantity: 1, status: 'available' }],
    config: { MAX_CONNECTIONS: '3', REQUEST_TIMEOUT_MS: '5000', LOG_LEVEL: 'warn' },
  });
  const { port } = api.app.server.address() as AddressInfo;
  // Three requests whose bodies are on their way: busy, not idle.
  const busy = await Promise.all(
    Array.from({ length: 3 }, () =>
      open(port, `PATCH /v1/inventory/1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${api.keys.write}\r\nContent-Type: application/json\r\nContent-Length: 14\r\n\r\n{"qua`),
    ),
  );
  await waitFor(() => api.app.connections.size === 3);
  await sleep(100);
  const refused = await open(port, `GET /v1/inventory HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${api.keys.read}\r\n\r\n`);
  await refused.closed;
  assert.match(refused.answer, /^HTTP\/1\.1 503 /);
  assert.match(refused.answer, /\r\nRetry-After: 1\r\n/i);
  assert.match(refused.answer, /\r\nConnection: close\r\n/i);
  const body = JSON.parse(refused.answer.slice(refused.answer.indexOf('\r\n\r\n') + 4)) as Record<string, unknown>;
  assert.deepEqual(Object.keys(body).sort(), ['code', 'message', 'status']);
  assert.equal(body.code, 'service_unavailable');
  assert.equal(body.status, 503);
  // The busy ones finish normally.
  for (const a of busy) a.socket.write('ntity":3}');
  await waitFor(() => busy.every((a) => a.answer.includes('"quantity":3')));
  for (const a of busy) assert.match(a.answer, /^HTTP\/1\.1 200 /);
  for (const a of busy) a.socket.destroy();
});

test('a client that pipelines without reading is cut past MAX_PIPELINED queued requests; others keep getting answers', async (t) => {
  const api = await buildTestApp(t, {
    transport: 'http',
    items: [{ petId: 1n, quantity: 1, status: 'available' }],
    // No timeout can fire within the test: only the count of queued requests can close the connection.
    config: { LOG_LEVEL: 'warn', REQUEST_TIMEOUT_MS: '3600000' },
  });
  const { port } = api.app.server.address() as AddressInfo;
  // The first answer is large, and the client never reads: everything behind it waits in the queue.
  const one = `GET /v1/openapi.json HTTP/1.1\r\nHost: x\r\n\r\n`;
  const hog = await open(port, one.repeat(MAX_PIPELINED * 4));
  hog.socket.pause();
  await waitFor(() => api.app.connections.size === 0);
  assert.equal(await normalGet(port, api.keys.read), 200);
  hog.socket.destroy();
});

test('connections whose answers are never read are closed after the answer timeout, so they cannot hold the cap', async (t) => {
  const api = await buildTestApp(t, {
    transport: 'http',
    // A list of ~150 KB: a few dozen of its answers are more than the socket buffers hold.
    items: Array.from({ length: 4000 }, (_, i) => ({ petId: BigInt(i + 1), quantity: 1, status: 'available' as const })),
    config: { MAX_CONNECTIONS: '3', REQUEST_TIMEOUT_MS: '300', STORE_TIMEOUT_MS: '200', LOG_LEVEL: 'warn' },
  });
  const { port } = api.app.server.address() as AddressInfo;
  // Each asks for far more than the socket buffers hold, and never reads: busy, never idle.
  const many = `GET /v1/inventory HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${api.keys.read}\r\n\r\n`.repeat(MAX_PIPELINED - 1);
  const hogs = await Promise.all(Array.from({ length: 3 }, () => open(port, many)));
  for (const hog of hogs) hog.socket.pause();
  await waitFor(() => api.app.connections.size === 3);
  // The answer timeout (300 + 2 x 200 ms, checked every sweep) closes them (a paused client sees that
  // only when it reads): nothing else would. Then a new client is served.
  await waitFor(() => api.app.connections.size === 0);
  assert.equal(await normalGet(port, api.keys.read), 200);
  for (const hog of hogs) hog.socket.destroy();
});
