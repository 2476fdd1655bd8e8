import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { test } from 'node:test';
import { HEAD_LIMIT, http1Server, type Http1Handler } from '../../bench/bare-http1.js';
import { sleep, waitFor } from '../support/process.js';
import { parseAnswers, type RawAnswer } from '../support/raw-http.js';

/** A server on a free port with `handle`, a raw socket to it, and what that socket has received so far. */
async function connected(handle: Http1Handler): Promise<{ socket: Socket; received: () => string; closed: Promise<unknown>; stop: () => Promise<void> }> {
  const server = http1Server(handle);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
  await once(socket, 'connect');
  let text = '';
  socket.setEncoding('latin1');
  socket.on('data', (chunk: string) => (text += chunk));
  // A reset after the server's close is no failure of these tests: what was received is asserted.
  socket.on('error', () => {});
  const closed = once(socket, 'close');
  return {
    socket,
    received: () => text,
    closed,
    stop: async () => {
      socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** Each test's bound: a framing that never answers fails the test rather than hanging the run. */
const TEST = { timeout: 10_000 };


/** Echoes method, url, the authorization header and the body, as JSON. */
const echo: Http1Handler = (request, respond) =>
  respond(200, 'content-type: application/json\r\n', JSON.stringify({ method: request.method, url: request.url, auth: request.headers.authorization, body: request.body.toString() }));

/** The answers received so far, once there are `count` of them (parseAnswers throws while the last is still arriving). */
const answered = async (received: () => string, count: number) => {
  const complete = () => {
    try {
      return parseAnswers(received());
    } catch {
      return [];
    }
  };
  await waitFor(() => complete().length >= count);
  return complete();
};

/** An answer's body as text. */
const text = (answer: RawAnswer | undefined) => answer!.body.toString();

test('bare-http1: requests on one connection, a body split across writes, are answered in order and the connection stays open', TEST, async () => {
  const c = await connected(echo);
  try {
    c.socket.write('PATCH /v1/inventory/7 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k\r\nContent-Length: 14\r\n\r\n{"quan');
    await sleep(50);
    assert.equal(c.received(), '', 'nothing is answered before the body has all arrived');
    c.socket.write('tity":3}');
    await answered(c.received, 1);
    c.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    const [first, second] = await answered(c.received, 2);
    assert.equal(first!.status, 200);
    assert.deepEqual(JSON.parse(text(first)), { method: 'PATCH', url: '/v1/inventory/7', auth: 'Bearer k', body: '{"quantity":3}' });
    assert.equal(first!.headers.connection, 'keep-alive');
    assert.equal(first!.headers['keep-alive'], 'timeout=65');
    assert.equal(first!.headers['content-type'], 'application/json');
    assert.match(first!.headers.date!, /GMT$/);
    assert.deepEqual(JSON.parse(text(second)), { method: 'GET', url: '/healthz', body: '' });
  } finally {
    await c.stop();
  }
});

test('bare-http1: pipelined requests answered out of order are written in request order', TEST, async () => {
  const later: (() => void)[] = [];
  const c = await connected((request, respond) => {
    // The first request's answer waits until the second has been answered (as a commit can finish a later batch's answer first).
    const send = () => respond(200, '', request.url);
    if (request.url === '/first') later.push(send);
    else {
      send();
      for (const s of later.splice(0)) s();
    }
  });
  try {
    c.socket.write('GET /first HTTP/1.1\r\n\r\nGET /second HTTP/1.1\r\n\r\n');
    assert.deepEqual(
      (await answered(c.received, 2)).map(text),
      ['/first', '/second'],
    );
  } finally {
    await c.stop();
  }
});

for (const [what, request] of [
  ['a chunked body', 'POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n'],
  ['a Content-Length that is not a number', 'POST /x HTTP/1.1\r\nContent-Length: 1e3\r\n\r\n'],
  ['a request line that is not HTTP/1.1', 'GET /x HTTP/1.0\r\n\r\n'],
  ['a header line without a colon', 'GET /x HTTP/1.1\r\nnonsense\r\n\r\n'],
  ['a head past the limit', `GET /x HTTP/1.1\r\nX: ${'a'.repeat(HEAD_LIMIT)}`],
] as const) {
  test(`bare-http1: ${what} is answered 400 and the connection closed`, TEST, async () => {
    let handled = 0;
    const c = await connected((req, respond) => {
      handled++;
      echo(req, respond);
    });
    try {
      c.socket.write(request);
      await c.closed;
      const [answer, ...more] = parseAnswers(c.received());
      assert.equal(answer!.status, 400);
      assert.equal(answer!.headers.connection, 'close');
      assert.deepEqual(JSON.parse(text(answer)), { code: 'bad_request' });
      assert.equal(more.length, 0);
      assert.equal(handled, 0);
    } finally {
      await c.stop();
    }
  });
}

test('bare-http1: a refused request behind one still unanswered waits for its answer, then closes the connection', TEST, async () => {
  let release: (() => void) | undefined;
  const c = await connected((request, respond) => {
    release = () => respond(200, '', request.url);
  });
  try {
    c.socket.write('GET /pending HTTP/1.1\r\n\r\nPOST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n');
    await waitFor(() => release !== undefined);
    await sleep(50);
    assert.equal(c.received(), '', 'the 400 does not overtake the answer before it');
    release!();
    await c.closed;
    assert.deepEqual(
      parseAnswers(c.received()).map((a) => [a.status, a.headers.connection, text(a)]),
      [
        [200, 'keep-alive', '/pending'],
        [400, 'close', '{"code":"bad_request"}'],
      ],
    );
  } finally {
    await c.stop();
  }
});
