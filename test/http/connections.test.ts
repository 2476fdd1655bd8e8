import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { createServer, type ServerResponse } from 'node:http';
import { describe, test, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ConnectionManager } from '../../src/http/connections.js';
import { BACKENDS, backendSkip } from '../support/backends.js';
import { buildTestApp, makeKey } from '../support/app.js';
import { assertRawError, parseAnswers, rawTranscript } from '../support/raw-http.js';

function errorBody(answer: string): { code: string; message: string; status: number } {
  return JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as { code: string; message: string; status: number };
}

for (const backend of BACKENDS) {
  describe(`HTTP edge cases on ${backend}`, { skip: await backendSkip(backend) }, () => {
    test('a request that does not arrive in time gets 408 request_timeout in the Error shape', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', config: { REQUEST_TIMEOUT_MS: '300' } });
      const { port } = api.app.server.address() as AddressInfo;
      const control = await stalledControl(t, 3000, () => 'GET /v1/inventory HTTP/1.1\r\nHost: x\r\n');
      const answer = await rawTranscript(port, ['GET /v1/inventory HTTP/1.1\r\nHost: x\r\n']);
      assert.match(answer, /^HTTP\/1\.1 408 /);
      assert.match(answer, /content-type: application\/json; charset=utf-8/i);
      assert.match(answer, /x-request-id: \S+/i);
      assert.deepEqual(errorBody(answer), { code: 'request_timeout', message: errorBody(answer).message, status: 408 });
      assert.equal(control.received(), '', "the 300 ms setting timed it out, before a limit ten times longer and Node's own 30 s check");
      control.end();
    });

    test('bytes that are not HTTP get 400 bad_request in the Error shape', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http' });
      const { port } = api.app.server.address() as AddressInfo;
      const answer = await rawTranscript(port, ['HELLO THERE\r\n\r\n']);
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
      const answer = await rawTranscript(port, [head, body.slice(0, 4), body.slice(4)], 100);
      assert.match(answer, /^HTTP\/1\.1 200 /);
      assert.match(answer, /\{"petId":1,"quantity":9,"status":"available","reserved":0,"available":9\}$/);
    });
  });
}

/** A listening app on SQLite (what Node answers on its own does not depend on the store) and its port. */
async function listening(t: TestContext, config: Record<string, string> = {}) {
  const api = await buildTestApp(t, { transport: 'http', items: [{ petId: 1n, quantity: 1, status: 'available' }], config });
  return { api, port: (api.app.server.address() as AddressInfo).port, auth: `Authorization: Bearer ${api.keys.write}\r\n` };
}

/**
 * A control for a request timeout: the same stalled request, sent first to an app of its own whose
 * REQUEST_TIMEOUT_MS is `limitMs`. While it has received nothing, no timeout longer than the one
 * under test can have fired: an order of events, not a measure of time.
 */
async function stalledControl(t: TestContext, limitMs: number, request: (auth: string) => string): Promise<{ received: () => string; end: () => void }> {
  const { port, auth } = await listening(t, { REQUEST_TIMEOUT_MS: String(limitMs) });
  const socket = connect(port, '127.0.0.1');
  let received = '';
  socket.on('data', (c: Buffer) => (received += c.toString('latin1')));
  socket.on('error', () => undefined);
  t.after(() => socket.destroy());
  await new Promise((done) => socket.on('connect', done));
  socket.write(request(auth));
  return { received: () => received, end: () => socket.destroy() };
}

describe("what Node would answer on its own is the service's Error, 401 first where a key can be read (decisions 7.3, 2.2)", () => {
  test('an HTTP/1.1 request without Host: 401 without a key, 400 bad_request with one, 400 on a public path; HTTP/1.0 needs none', async (t) => {
    const { port, auth } = await listening(t);
    assertRawError(parseAnswers(await rawTranscript(port, ['GET /v1/inventory HTTP/1.1\r\nConnection: close\r\n\r\n']))[0], 401, 'unauthorized');
    assertRawError(parseAnswers(await rawTranscript(port, [`GET /v1/inventory HTTP/1.1\r\n${auth}Connection: close\r\n\r\n`]))[0], 400, 'bad_request');
    assertRawError(parseAnswers(await rawTranscript(port, ['GET /v1/inventory/1 HTTP/1.1\r\nConnection: close\r\n\r\n']))[0], 401, 'unauthorized');
    assertRawError(parseAnswers(await rawTranscript(port, ['GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n']))[0], 400, 'bad_request');
    const old = parseAnswers(await rawTranscript(port, [`GET /v1/inventory HTTP/1.0\r\n${auth}\r\n`]));
    assert.equal(old[0]?.status, 200);
  });

  test('Expect other than 100-continue: 401 without a key, 417 expectation_failed with one; 100-continue works', async (t) => {
    const { port, auth } = await listening(t);
    const expect = (headers: string) => rawTranscript(port, [`GET /v1/inventory HTTP/1.1\r\nHost: x\r\n${headers}Connection: close\r\n\r\n`]);
    assertRawError(parseAnswers(await expect('Expect: garbage\r\n'))[0], 401, 'unauthorized');
    assertRawError(parseAnswers(await expect(`${auth}Expect: garbage\r\n`))[0], 417, 'expectation_failed');
    const body = '{"quantity":4}';
    const patch = parseAnswers(
      await rawTranscript(port, [
        `PATCH /v1/inventory/1 HTTP/1.1\r\nHost: x\r\n${auth}Expect: 100-continue\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
      ]).then((raw) => raw.replace(/^HTTP\/1\.1 100 Continue\r\n\r\n/, '')),
    );
    assert.equal(patch[0]?.status, 200);
  });

  test('CONNECT: answered (Node would drop it), 401 without a key, 404 not_found with one, and the connection closes', async (t) => {
    const { port, auth } = await listening(t);
    assertRawError(parseAnswers(await rawTranscript(port, ['CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n']))[0], 401, 'unauthorized');
    const withKey = parseAnswers(await rawTranscript(port, [`CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n${auth}\r\n`]));
    assertRawError(withKey[0], 404, 'not_found');
    assert.equal(withKey[0]?.headers.connection, 'close');
  });

  test('Upgrade: 401 without a key; with one the Upgrade is ignored and the request answered', async (t) => {
    const { port, auth } = await listening(t);
    const upgrade = 'Connection: Upgrade, close\r\nUpgrade: websocket\r\n';
    assertRawError(parseAnswers(await rawTranscript(port, [`GET /v1/inventory HTTP/1.1\r\nHost: x\r\n${upgrade}\r\n`]))[0], 401, 'unauthorized');
    const answered = parseAnswers(await rawTranscript(port, [`GET /v1/inventory HTTP/1.1\r\nHost: x\r\n${auth}${upgrade}\r\n`]));
    assert.equal(answered[0]?.status, 200);
    assert.equal(answered[0]?.body.toString(), '[{"petId":1,"quantity":1,"status":"available","reserved":0,"available":1}]');
  });

  test('headers over the limit: 431 headers_too_large (no key can be read), and the connection closes', async (t) => {
    const { port, auth } = await listening(t);
    const answers = parseAnswers(await rawTranscript(port, [`GET /v1/inventory HTTP/1.1\r\nHost: x\r\n${auth}X-Big: ${'a'.repeat(20_000)}\r\n\r\n`]));
    assertRawError(answers[0], 431, 'headers_too_large');
    assert.equal(answers[0]?.headers.connection, 'close');
  });

  test('what the parser refuses (unknown method, bad version, bad Content-Length, bad chunk) is 400 bad_request', async (t) => {
    const { port, auth } = await listening(t);
    const cases = [
      `FOO /v1/inventory HTTP/1.1\r\nHost: x\r\n${auth}\r\n`,
      `GET /v1/inventory HTTP/7.1\r\nHost: x\r\n${auth}\r\n`,
      `PATCH /v1/inventory/1 HTTP/1.1\r\nHost: x\r\n${auth}Content-Length: 1x\r\n\r\n`,
      `PATCH /v1/inventory/1 HTTP/1.1\r\nHost: x\r\n${auth}Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n`,
      `PATCH /v1/inventory/1 HTTP/1.1\r\nHost: x\r\n${auth}Transfer-Encoding: chunked\r\n\r\nzz\r\n`,
    ];
    for (const request of cases) {
      // A chunked body without a type is refused (415) before its bad chunk is read: the 400 closes the connection after it.
      const answers = parseAnswers(await rawTranscript(port, [request]));
      assertRawError(answers.at(-1), 400, 'bad_request');
    }
  });

  test('an unparseable request behind a good one on the same connection: the good one is answered first', async (t) => {
    const { port, auth } = await listening(t);
    const answers = parseAnswers(await rawTranscript(port, [`GET /v1/inventory HTTP/1.1\r\nHost: x\r\n${auth}\r\nGARBAGE\r\n\r\n`]));
    assert.deepEqual(answers.map((a) => a.status), [200, 400]);
    assertRawError(answers[1], 400, 'bad_request');
  });
});

describe('a body that stalls gets 408 within about REQUEST_TIMEOUT_MS, and its connection closes (decisions 7.3)', () => {
  const cases = [
    { lane: 'the fast lane (Content-Length)', framing: 'Content-Type: application/json\r\nContent-Length: 20\r\n\r\n{"qua' },
    { lane: 'Fastify (chunked)', framing: 'Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{"qua\r\n' },
  ];
  for (const { lane, framing } of cases) {
    test(lane, async (t) => {
      const { api, port, auth } = await listening(t, { REQUEST_TIMEOUT_MS: '400' });
      const stalled = (key: string) => `PATCH /v1/inventory/1 HTTP/1.1\r\nHost: x\r\n${key}${framing}`;
      const control = await stalledControl(t, 4000, stalled);
      const answers = parseAnswers(await rawTranscript(port, [stalled(auth)]));
      assert.equal(answers.length, 1, JSON.stringify(answers));
      assertRawError(answers[0], 408, 'request_timeout');
      assert.equal(answers[0]?.headers.connection, 'close');
      assert.equal(control.received(), '', 'the 400 ms setting timed it out, before a limit ten times longer (Node alone held it for its 60 s)');
      control.end();
      assert.equal((await api.store.entries.getEntry(1n))?.item.quantity, 1, 'nothing applied');
    });
  }

  test('also while the key is still being looked up (nothing reads the body yet)', async (t) => {
    const { api, port } = await listening(t, { REQUEST_TIMEOUT_MS: '400' });
    const fresh = await makeKey(api.store, api.config.environment, ['inventory:write']);
    const answers = parseAnswers(
      await rawTranscript(port, [`PATCH /v1/inventory/1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${fresh}\r\nContent-Type: application/json\r\nContent-Length: 20\r\n\r\n{"qua`]),
    );
    assert.equal(answers.length, 1);
    assertRawError(answers[0], 408, 'request_timeout');
  });
});

for (const backend of BACKENDS) {
  describe(`pipelined requests on one connection on ${backend} (decisions 7.3)`, { skip: await backendSkip(backend) }, () => {
    const patch = (auth: string, body: string, extra = '') =>
      `PATCH /v1/inventory/1 HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: ${body.length}\r\n${extra}\r\n${body}`;

    test('a request sees every write answered before it on its connection, in both lanes', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: [{ petId: 1n, quantity: 1, status: 'available' }] });
      const port = (api.app.server.address() as AddressInfo).port;
      const auth = `Authorization: Bearer ${api.keys.write}\r\n`;
      // The lane takes only keys whose lookup is under 2 s old, and a use never renews one: a fresh lookup just before,
      // from a client of its own, so the lane is in play however loaded the machine (test/http/fast-lane.test.ts).
      api.app.authenticator.forget();
      await api.app.inject({ method: 'GET', url: '/v1/inventory/0', remoteAddress: '10.0.0.2', headers: { authorization: `Bearer ${api.keys.write}` } });
      const answers = parseAnswers(
        await rawTranscript(port, [
          patch(auth, '{"quantity":5}') +
            `GET /v1/inventory HTTP/1.1\r\nHost: x\r\n${auth}\r\n` +
            patch(auth, '{"quantity":6}') +
            `GET /v1/inventory/1 HTTP/1.1\r\nHost: x\r\n${auth}\r\n` +
            patch(auth, '{"quantity":7}') +
            `GET /v1/inventory HTTP/1.1\r\nHost: x\r\n${auth}Connection: close\r\n\r\n`,
        ]),
      );
      assert.deepEqual(answers.map((a) => a.status), [200, 200, 200, 200, 200, 200]);
      assert.equal(answers[1]?.body.toString(), '[{"petId":1,"quantity":5,"status":"available","reserved":0,"available":5}]', 'the fast lane GET sees the PATCH before it');
      assert.equal(answers[3]?.body.toString(), '{"petId":1,"quantity":6,"status":"available","reserved":0,"available":6}', "Fastify's GET sees the PATCH before it");
      assert.equal(answers[5]?.body.toString(), '[{"petId":1,"quantity":7,"status":"available","reserved":0,"available":7}]');
      // Some of them at least: a machine slow enough to take 2 s over the transcript sends the rest to Fastify, which is also right.
      assert.ok(api.app.fastLane.answered >= 1, 'the lane took its share');
    });

    test('nothing behind an answer that closes the connection (a 413) is executed, in either lane (RFC 9112 9.6)', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: [{ petId: 1n, quantity: 1, status: 'available' }], config: { BODY_LIMIT: '64' } });
      const port = (api.app.server.address() as AddressInfo).port;
      const auth = `Authorization: Bearer ${api.keys.write}\r\n`;
      const big = `{"quantity":2,"reason":"${'x'.repeat(100)}"}`;
      // Behind the 413: a PATCH the fast lane would take, one Fastify would take (chunked), and a GET.
      const answers = parseAnswers(
        await rawTranscript(port, [
          patch(auth, big) +
            patch(auth, '{"quantity":8}') +
            `PATCH /v1/inventory/1 HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\ne\r\n{"quantity":9}\r\n0\r\n\r\n` +
            `GET /v1/inventory HTTP/1.1\r\nHost: x\r\n${auth}\r\n`,
        ]),
      );
      assert.equal(answers.length, 1, JSON.stringify(answers));
      assertRawError(answers[0], 413, 'payload_too_large');
      assert.equal(answers[0]?.headers.connection, 'close');
      await new Promise((done) => setTimeout(done, 200));
      assert.equal((await api.store.entries.getEntry(1n))?.item.quantity, 1, 'no PATCH behind the 413 was applied');
    });
  });
}

describe('the end of a drain', () => {
  // Each answer of a drain closes its connection, and its client reconnects at once: the listener may close just after
  // such a connection was accepted and before its request has been read. It gets DRAIN_IDLE_GRACE_MS from its accept
  // to send it, counted on the clock, not on the sweep's (a second old at worst).
  test('a connection accepted just before the listener closes still has its grace to send, and is answered', { timeout: 20_000 }, async (t) => {
    // requestTimeoutMs 5000: the sweep, and with it the manager's clock, moves once a second.
    const manager = new ConnectionManager({ maxConnections: 10, requestTimeoutMs: 5000, answerTimeoutMs: 10_000, warn: () => undefined });
    const server = createServer();
    // /hold is answered only once the late connection has its answer.
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    manager.attach(server, (req, res) => {
      if (req.url === '/hold') void held.then(() => res.end('held'));
      else res.end('answered');
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const port = (server.address() as AddressInfo).port;
    const sockets: Socket[] = [];
    const open = async () => {
      const socket = connect(port, '127.0.0.1');
      socket.on('error', () => undefined);
      sockets.push(socket);
      await once(socket, 'connect');
      return socket;
    };
    t.after(() => {
      for (const socket of sockets) socket.destroy();
      manager.close();
    });
    // A request in flight keeps the drain from ending before its time (an idle connection would be closed after its grace).
    (await open()).write('GET /hold HTTP/1.1\r\nHost: x\r\n\r\n');
    const opened = sleep(450).then(open);
    // The request goes just after the listener closed: the drain's end has begun, 170 ms into the accepted connection's grace.
    // A connection that failed to open fails the test at its await below, not here as well.
    const send = (socket: Socket) => socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    const drained = manager.drain(600, () => setTimeout(() => void opened.then(send, () => undefined), 20));
    const late = await opened;
    const text: Buffer[] = [];
    late.on('data', (chunk: Buffer) => text.push(chunk));
    await once(late, 'close');
    assert.match(Buffer.concat(text).toString(), /^HTTP\/1\.1 200 [^]*\r\nconnection: close\r\n[^]*answered$/i);
    release();
    await drained;
    assert.equal(manager.size, 0);
  });
});

describe('closing the app closes the connections with no request in progress', () => {
  // Without it the close waits until each client gives up its spare connection (undici: 70 s after the last answer).
  test('one that has sent nothing yet and one idle after its answer', { timeout: 30_000 }, async (t) => {
    const { api, port, auth } = await listening(t);
    const silent = connect(port, '127.0.0.1');
    const used = connect(port, '127.0.0.1');
    for (const socket of [silent, used]) socket.on('error', () => undefined);
    // Should the close hang, the timeout ends the test and these, so the app's own close (after the test) can end.
    t.signal.addEventListener('abort', () => [silent, used].forEach((socket) => socket.destroy()));
    await Promise.all([once(silent, 'connect'), once(used, 'connect')]);
    used.write(`GET /v1/inventory HTTP/1.1\r\nHost: x\r\n${auth}\r\n`);
    await once(used, 'data');
    const closed = Promise.all([once(silent, 'close'), once(used, 'close')]);
    await api.app.close();
    await closed;
    assert.equal(silent.bytesRead, 0, 'closed without an answer');
  });

  // The server's own close sweeps the connections idle at that moment; one whose answer ends just after stayed open until
  // its client let go or the keep-alive timeout (72 s by default) passed, and the close waited for it.
  for (const [name, head] of [['keep-alive', ''], ['closing (Connection: close)', 'Connection: close\r\n']] as const) {
  test(`one whose answer ends after the close began, ${name}`, { timeout: 20_000 }, async (t) => {
    const manager = new ConnectionManager({ maxConnections: 10, requestTimeoutMs: 5000, answerTimeoutMs: 10_000, warn: () => undefined });
    const server = createServer();
    server.keepAliveTimeout = 60_000;
    let answering: ServerResponse | undefined;
    const arrived = new Promise<void>((resolve) => {
      manager.attach(server, (_req, res) => {
        answering = res;
        res.writeHead(200, { 'content-type': 'text/plain' }).write('first part');
        resolve();
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const client = connect((server.address() as AddressInfo).port, '127.0.0.1');
    client.on('error', () => undefined);
    t.after(() => {
      client.destroy();
      manager.close();
    });
    client.write(`GET / HTTP/1.1\r\nHost: x\r\n${head}\r\n`);
    await arrived;
    manager.closeIdle();
    const closed = once(server, 'close');
    server.close();
    answering!.end('last part');
    await closed;
    assert.equal(manager.size, 0, 'its connection closed, not left idle');
  });
  }

  // Between the app's first close step and the server's close, a client may open a spare connection: sending nothing, it is
  // not idle to Node's own close, which would then wait for the client to give it up.
  test('one opened after the close began', { timeout: 20_000 }, async (t) => {
    const manager = new ConnectionManager({ maxConnections: 10, requestTimeoutMs: 5000, answerTimeoutMs: 10_000, warn: () => undefined });
    const server = createServer();
    manager.attach(server, (_req, res) => res.end());
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    manager.closeIdle();
    const late = connect((server.address() as AddressInfo).port, '127.0.0.1');
    late.on('error', () => undefined);
    t.after(() => {
      late.destroy();
      manager.close();
    });
    await once(late, 'connect');
    const closed = once(server, 'close');
    server.close();
    await closed;
    assert.equal(manager.size, 0);
  });
});

describe('at the cap', () => {
  // A connection accepted a moment ago may have its first request in the kernel's buffer, unread: closing it for a
  // newcomer would cut that request unanswered. An answered (kept-alive) one, or one silent past the grace, is closed.
  test('a fresh connection is not closed for a newcomer, who gets 503; an answered idle one is', { timeout: 20_000 }, async (t) => {
    const manager = new ConnectionManager({ maxConnections: 2, requestTimeoutMs: 5000, answerTimeoutMs: 10_000, warn: () => undefined });
    const server = createServer();
    manager.attach(server, (_req, res) => res.end('answered'));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const port = (server.address() as AddressInfo).port;
    const sockets: Socket[] = [];
    const open = async () => {
      const socket = connect(port, '127.0.0.1');
      let text = '';
      socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
      socket.on('error', () => undefined);
      sockets.push(socket);
      await once(socket, 'connect');
      return { socket, text: () => text };
    };
    t.after(() => {
      for (const socket of sockets) socket.destroy();
      manager.close();
      server.close();
    });
    const answered = await open();
    answered.socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    while (!answered.text().endsWith('answered')) await once(answered.socket, 'data');
    const fresh = await open();
    // Both slots taken: the answered idle one makes room, the fresh one keeps its place.
    const second = await open();
    await once(answered.socket, 'close');
    // Now both open ones are fresh: the newcomer is refused, and both stay open.
    const refused = await open();
    await once(refused.socket, 'close');
    assert.match(refused.text(), /^HTTP\/1\.1 503 /);
    assertRawError(parseAnswers(refused.text())[0], 503, 'service_unavailable');
    assert.equal(fresh.socket.destroyed, false);
    assert.equal(second.socket.destroyed, false);
    // The fresh one's request, sent late, is answered.
    fresh.socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    while (!fresh.text().endsWith('answered')) await once(fresh.socket, 'data');
    assert.match(fresh.text(), /^HTTP\/1\.1 200 /);
  });
});

describe('requests being answered', () => {
  // The webhook deliveries slow down while it is above 0 (decisions 10.14); an event stream, open for as long as its
  // client reads it, is not a request waiting for its answer.
  test('counts a request from its start to its answer, never an event stream', { timeout: 20_000 }, async (t) => {
    const manager = new ConnectionManager({ maxConnections: 10, requestTimeoutMs: 5000, answerTimeoutMs: 10_000, warn: () => undefined });
    const server = createServer();
    let answer = () => {};
    let streamed = () => {};
    const signal = () => {
      let resolve = () => {};
      const promise = new Promise<void>((done) => (resolve = done));
      return { promise, resolve: () => resolve() };
    };
    const started = { plain: signal(), stream: signal() };
    manager.attach(server, (req, res) => {
      if (req.url === '/stream') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        manager.streaming(res, () => res.end());
        streamed = () => res.end();
        started.stream.resolve();
      } else {
        answer = () => res.end('answered');
        started.plain.resolve();
      }
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const port = (server.address() as AddressInfo).port;
    const sockets: Socket[] = [];
    t.after(() => {
      for (const socket of sockets) socket.destroy();
      manager.close();
      server.close();
    });
    const send = (path: string) => {
      const socket = connect(port, '127.0.0.1');
      socket.on('error', () => undefined);
      sockets.push(socket);
      socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
      return socket;
    };
    assert.equal(manager.answering, 0);
    const plain = send('/');
    await started.plain.promise;
    assert.equal(manager.answering, 1);
    send('/stream');
    await started.stream.promise;
    assert.equal(manager.answering, 1, 'the stream is not counted');
    answer();
    await once(plain, 'data');
    assert.equal(manager.answering, 0);
    streamed();
  });
});
