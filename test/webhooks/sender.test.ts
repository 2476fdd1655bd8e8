import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { promisify } from 'node:util';
import { createSecureContext, type SecureContext } from 'node:tls';
import { after, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { newWebhookSecret } from '../../src/webhooks/secret.js';
import { WebhookSender, type SentAttempt } from '../../src/webhooks/sender.js';
import { webhookHeaders } from '../../src/webhooks/signing.js';
import { missingToolSkip } from '../support/process.js';

interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
}

type Handler = (request: http.IncomingMessage, response: http.ServerResponse, received: Received) => void;

/** A receiver on 127.0.0.1 that counts connections and keeps what it was sent. */
async function receiver(handler: Handler) {
  const requests: Received[] = [];
  let connections = 0;
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const received = { headers: request.headers, body: Buffer.concat(chunks).toString('utf8') };
      requests.push(received);
      handler(request, response, received);
    });
  });
  server.on('connection', () => connections++);
  const port = await listening(server);
  return { port, url: `http://127.0.0.1:${port}/hook`, requests, connections: () => connections, server };
}

const cleanups: (() => Promise<void>)[] = [];
const senders: WebhookSender[] = [];
after(async () => {
  for (const sender of senders) sender.close();
  await Promise.all(cleanups.map((close) => close()));
});

/** Listens on 127.0.0.1 at a free port until the tests end (then closed with its connections); its port. */
async function listening(server: http.Server | https.Server): Promise<number> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  cleanups.push(async () => {
    server.closeAllConnections();
    server.close();
    await once(server, 'close');
  });
  return (server.address() as AddressInfo).port;
}

function sender(options: { timeoutMs?: number; allowPrivate?: boolean } = {}): WebhookSender {
  const made = new WebhookSender({ timeoutMs: options.timeoutMs ?? 10_000, allowPrivate: options.allowPrivate ?? true });
  senders.push(made);
  return made;
}

const secret = newWebhookSecret();
function message(id = 'evt_1') {
  const body = JSON.stringify({ id, type: 'stock.changed', data: { petId: '1', quantity: 2 } });
  return { id, body, headers: webhookHeaders({ id, body }, [secret], new Date()) };
}

test('a 2xx: a signed POST of the body that standardwebhooks verifies; its status and answer come back', async () => {
  const target = await receiver((_request, response) => response.writeHead(200).end('thanks'));
  const sent = message('evt_7');
  const attempt = await sender().send(target.url, sent);
  assert.deepEqual(attempt.outcome, { status: 200 });
  assert.equal(attempt.responseBody, 'thanks');
  assert.ok(Number.isInteger(attempt.durationMs) && attempt.durationMs >= 0);
  const [received] = target.requests;
  assert.equal(received?.body, sent.body);
  assert.equal(received.headers['content-type'], 'application/json');
  assert.equal(received.headers['webhook-id'], 'evt_7');
  assert.equal(received.headers['content-length'], String(Buffer.byteLength(sent.body)));
  const headers = Object.fromEntries(Object.entries(received.headers).map(([name, value]) => [name, String(value)]));
  assert.deepEqual(new Webhook(secret).verify(received.body, headers), JSON.parse(sent.body));
});

test('a header undici refuses (a name that is no token, a line break in a value) fails the attempt, and nothing is sent', async () => {
  const target = await receiver((_request, response) => response.writeHead(204).end());
  const badName = await sender().send(target.url, { ...message(), headers: { 'bad name': 'x' } });
  assert.deepEqual(badName.outcome, { error: 'invalid header key' });
  assert.equal(badName.responseBody, null);
  const badValue = await sender().send(target.url, { ...message(), headers: { 'x-note': 'a\r\nx-injected: 1' } });
  assert.deepEqual(badValue.outcome, { error: 'invalid x-note header' });
  assert.equal(target.requests.length, 0);
  assert.equal(target.connections(), 0);
});

test('a 500 is a status with its answer; no Retry-After is read on it', async () => {
  const target = await receiver((_request, response) => response.writeHead(500, { 'retry-after': '30' }).end('{"error":"boom"}'));
  const attempt = await sender().send(target.url, message());
  assert.deepEqual(attempt.outcome, { status: 500 });
  assert.equal(attempt.responseBody, '{"error":"boom"}');
});

test('a redirect is not followed: its status is the outcome and the Location gets nothing', async () => {
  const elsewhere = await receiver((_request, response) => response.writeHead(200).end());
  const target = await receiver((_request, response) => response.writeHead(302, { location: elsewhere.url }).end());
  const attempt = await sender().send(target.url, message());
  assert.deepEqual(attempt.outcome, { status: 302 });
  assert.equal(target.requests.length, 1);
  assert.equal(elsewhere.requests.length, 0);
  assert.equal(elsewhere.connections(), 0);
});

test('a receiver that never answers: timed out, its connection dropped, and the next send works', async () => {
  let first = true;
  const target = await receiver((request, response) => {
    if (first) {
      first = false;
      return; // never answers
    }
    response.writeHead(200).end('ok');
  });
  const dropped = new Promise<void>((resolve) => target.server.once('request', (request: http.IncomingMessage) => request.socket.once('close', () => resolve())));
  const webhooks = sender({ timeoutMs: 1000 });
  const attempt = await webhooks.send(target.url, message());
  assert.deepEqual(attempt.outcome, { error: 'timed out after 1000 ms' });
  assert.equal(attempt.responseBody, null);
  await dropped;
  assert.deepEqual((await webhooks.send(target.url, message('evt_2'))).outcome, { status: 200 });
  assert.equal(target.requests.length, 2);
});

test('sends to one origin at once each get a connection: one left unanswered holds up no other', async () => {
  const target = await receiver((request, response) => {
    if (request.headers['webhook-id'] !== 'evt_slow') response.writeHead(204).end();
  });
  const webhooks = sender();
  let slowDone = false;
  const slow = webhooks.send(target.url, message('evt_slow')).then((attempt) => {
    slowDone = true;
    return attempt;
  });
  while (target.requests.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
  for (const id of ['evt_a', 'evt_b']) assert.deepEqual((await webhooks.send(target.url, message(id))).outcome, { status: 204 });
  assert.equal(slowDone, false);
  assert.equal(target.connections(), 2);
  webhooks.close();
  assert.deepEqual((await slow).outcome, { error: 'the sender was closed' });
});

test('connection refused (a closed port) is an error, not a status', async () => {
  const closed = http.createServer();
  closed.listen(0, '127.0.0.1');
  await once(closed, 'listening');
  const { port } = closed.address() as AddressInfo;
  closed.close();
  await once(closed, 'close');
  const attempt = await sender().send(`http://127.0.0.1:${port}/hook`, message());
  assert.deepEqual(attempt.outcome, { error: 'ECONNREFUSED' });
  assert.equal(attempt.responseBody, null);
});

test('Retry-After on 429 and 503, in seconds or as an HTTP date; an unreadable one is left out', async () => {
  const answers: [number, string][] = [
    [429, '7'],
    [503, new Date(Date.now() + 120_000).toUTCString()],
    [429, 'soon'],
    [503, new Date(Date.now() - 60_000).toUTCString()],
  ];
  const target = await receiver((_request, response) => {
    const [status, retryAfter] = answers[target.requests.length - 1]!;
    response.writeHead(status, { 'retry-after': retryAfter }).end();
  });
  const webhooks = sender();
  assert.deepEqual((await webhooks.send(target.url, message())).outcome, { status: 429, retryAfterMs: 7000 });
  const dated = (await webhooks.send(target.url, message())).outcome;
  assert.ok('status' in dated && dated.status === 503 && dated.retryAfterMs !== undefined, JSON.stringify(dated));
  // The date has whole seconds and time passed since it was written: somewhat under two minutes.
  assert.ok(dated.retryAfterMs > 0 && dated.retryAfterMs <= 120_000, String(dated.retryAfterMs));
  assert.deepEqual((await webhooks.send(target.url, message())).outcome, { status: 429 });
  assert.deepEqual((await webhooks.send(target.url, message())).outcome, { status: 503, retryAfterMs: 0 });
});

test('an endless answer is read up to 64 KiB, then the connection is dropped; 1 KiB of it is kept', async () => {
  const chunk = Buffer.alloc(16 * 1024, 'x');
  let written = 0;
  const target = await receiver((request, response) => {
    response.writeHead(200, { 'content-type': 'text/plain' });
    const write = (): void => {
      // Writes until the sender hangs up: it must not read to an end that never comes.
      while (!response.destroyed) {
        written += chunk.length;
        if (!response.write(chunk)) {
          response.once('drain', write);
          return;
        }
      }
    };
    write();
  });
  const closed = new Promise<void>((resolve) => target.server.once('request', (request: http.IncomingMessage) => request.socket.once('close', () => resolve())));
  const attempt = await sender().send(target.url, message());
  assert.deepEqual(attempt.outcome, { status: 200 });
  assert.equal(attempt.responseBody, 'x'.repeat(1024));
  await closed;
  assert.ok(written > 64 * 1024);
});

test('keep-alive: sends to one receiver reuse one connection', async () => {
  const target = await receiver((_request, response) => response.writeHead(204).end());
  const webhooks = sender();
  for (const id of ['evt_1', 'evt_2', 'evt_3']) assert.deepEqual((await webhooks.send(target.url, message(id))).outcome, { status: 204 });
  assert.equal(target.requests.length, 3);
  assert.equal(target.connections(), 1);
  // close() drops it; the sender still works, on a new connection.
  webhooks.close();
  assert.deepEqual((await webhooks.send(target.url, message('evt_4'))).outcome, { status: 204 });
  assert.equal(target.connections(), 2);
});

test('without allowPrivate, loopback, private and mapped addresses, a name resolving to loopback, and http are refused before any connection', async () => {
  const target = await receiver((_request, response) => response.writeHead(200).end());
  const guarded = sender({ allowPrivate: false });
  const refusals: [string, RegExp][] = [
    [`https://127.0.0.1:${target.port}/hook`, /^refused: 127\.0\.0\.1 is a private address/],
    [`https://[::1]:${target.port}/hook`, /^refused: ::1 is a private address/],
    // IPv4 written inside IPv6 is judged by the IPv4 address (the URL parser writes it in hex).
    [`https://[::ffff:127.0.0.1]:${target.port}/hook`, /^refused: ::ffff:7f00:1 is a private address/],
    [`https://0.0.0.0:${target.port}/hook`, /^refused: 0\.0\.0\.0 is a private address/],
    // Refused as a literal, before undici is asked to connect: no packet leaves for it.
    ['https://10.0.0.1/hook', /^refused: 10\.0\.0\.1 is a private address/],
    // A name goes through the lookup: refused on the address it resolved to, at connect time.
    [`https://localhost:${target.port}/hook`, /^refused: localhost resolves to (127\.0\.0\.1|::1), a private address/],
    [`http://127.0.0.1:${target.port}/hook`, /^refused: only https/],
    ['not a url', /^not a URL$/],
  ];
  for (const [url, why] of refusals) {
    const attempt = await guarded.send(url, message());
    assert.ok('error' in attempt.outcome, url);
    assert.match(attempt.outcome.error, why, url);
    assert.equal(attempt.responseBody, null);
  }
  assert.equal(target.connections(), 0);
  // The count works: the same receiver, allowed (WEBHOOKS_ALLOW_PRIVATE=true), by name and by mapped address, gets its connections.
  const allowed = sender();
  assert.deepEqual((await allowed.send(`http://localhost:${target.port}/hook`, message())).outcome, { status: 200 });
  assert.deepEqual((await allowed.send(`http://[::ffff:127.0.0.1]:${target.port}/hook`, message())).outcome, { status: 200 });
  assert.equal(target.connections(), 2);
});

test('a kept-alive connection the receiver drops before answering is retried once on a new one, with the same webhook-id', async () => {
  const target = await receiver((request, response) => {
    // The second request arrives on the kept-alive connection: hang up on it, as a receiver closing an idle connection would.
    if (target.requests.length === 2) request.socket.destroy();
    else response.writeHead(200).end();
  });
  const webhooks = sender();
  assert.deepEqual((await webhooks.send(target.url, message('evt_1'))).outcome, { status: 200 });
  assert.deepEqual((await webhooks.send(target.url, message('evt_2'))).outcome, { status: 200 });
  assert.deepEqual(target.requests.map((received) => received.headers['webhook-id']), ['evt_1', 'evt_2', 'evt_2']);
  assert.equal(target.connections(), 2);
});

test('a new connection dropped before an answer is a failure, not resent', async () => {
  const target = await receiver((request) => request.socket.destroy());
  const attempt = await sender().send(target.url, message());
  assert.deepEqual(attempt.outcome, { error: 'other side closed' });
  assert.equal(target.requests.length, 1);
});

test('close() fails every send under way at once, and resends none on a new connection', async () => {
  const hanging = (): Promise<Awaited<ReturnType<typeof receiver>>> =>
    receiver((_request, response) => {
      // The first is answered, so that the second goes over a kept-alive connection; the second never is.
      if (response.req.headers['webhook-id'] === 'evt_1') response.writeHead(204).end();
    });
  const targets = [await hanging(), await hanging()];
  const webhooks = sender();
  for (const target of targets) assert.deepEqual((await webhooks.send(target.url, message('evt_1'))).outcome, { status: 204 });
  const pending = targets.map((target) => webhooks.send(target.url, message('evt_2')));
  while (targets.some((target) => target.requests.length < 2)) await new Promise((resolve) => setTimeout(resolve, 5));
  webhooks.close();
  for (const attempt of await Promise.all(pending)) assert.deepEqual(attempt.outcome, { error: 'the sender was closed' });
  for (const target of targets) {
    assert.equal(target.requests.length, 2);
    assert.equal(target.connections(), 1);
  }
});

test('close() cancels a first send still waiting for the HTTP client to load: nothing is sent', async () => {
  const target = await receiver((_request, response) => response.writeHead(204).end());
  const webhooks = sender();
  const pending = webhooks.send(target.url, message());
  webhooks.close();
  assert.deepEqual((await pending).outcome, { error: 'the sender was closed' });
  assert.equal(target.connections(), 0);
});

/** A receiver on 127.0.0.1 that writes `answer` as raw bytes to whatever it is sent, then closes (or not): for answers node:http would not write. */
async function rawReceiver(answer: string, close: boolean): Promise<string> {
  const server = net.createServer((socket) => {
    socket.once('data', () => (close ? socket.end(answer) : socket.write(answer)));
    socket.on('error', () => undefined);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  cleanups.push(async () => {
    server.close();
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
}

test('answers as undici reads them: a chunked body, a body cut short after its status, a malformed answer', async () => {
  const webhooks = sender();
  const chunked = await webhooks.send(await rawReceiver('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n', false), message());
  assert.deepEqual([chunked.outcome, chunked.responseBody], [{ status: 200 }, 'hello world']);
  // The receiver's status stands, with what came of the body.
  const cut = await webhooks.send(await rawReceiver('HTTP/1.1 503 Busy\r\nContent-Length: 100\r\nRetry-After: 5\r\n\r\npartial', true), message());
  assert.deepEqual([cut.outcome, cut.responseBody], [{ status: 503, retryAfterMs: 5000 }, 'partial']);
  // What is not HTTP, in undici's words.
  const garbage = await webhooks.send(await rawReceiver('SMTP ready\r\n\r\n', true), message());
  assert.deepEqual([garbage.outcome, garbage.responseBody], [{ error: 'Response does not match the HTTP/1.1 protocol (Expected HTTP/, RTSP/ or ICE/)' }, null]);
});

const OPENSSL = '/usr/bin/openssl';
/** The https tests' skip: where openssl is missing, they are skipped with a note, except under CI=true, where they run and fail. */
const OPENSSL_SKIP = missingToolSkip('the https sender tests', OPENSSL, 'apt-get install -y openssl');

/** A self-signed certificate for localhost and 127.0.0.1, made with openssl. */
function selfSigned(): { key: string; cert: string } {
  const dir = mkdtempSync(join(tmpdir(), 'webhook-tls-'));
  try {
    execFileSync(OPENSSL, ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { stdio: 'ignore' });
    return { key: readFileSync(join(dir, 'key.pem'), 'utf8'), cert: readFileSync(join(dir, 'cert.pem'), 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('https: the certificate is verified (a self-signed one is refused), with the URL\'s name as SNI and none for an IP literal', { skip: OPENSSL_SKIP }, async () => {
  const credentials = selfSigned();
  const names: string[] = [];
  const context = createSecureContext(credentials);
  const SNICallback = (name: string, callback: (error: Error | null, context: SecureContext) => void): void => {
    names.push(name);
    callback(null, context);
  };
  const server = https.createServer({ ...credentials, SNICallback }, (_request, response) => response.writeHead(200).end());
  server.on('tlsClientError', () => undefined);
  let handshakes = 0;
  server.on('connection', () => handshakes++);
  const port = await listening(server);
  const webhooks = sender();
  for (const url of [`https://localhost:${port}/hook`, `https://127.0.0.1:${port}/hook`]) {
    const attempt = await webhooks.send(url, message());
    assert.deepEqual(attempt.outcome, { error: 'DEPTH_ZERO_SELF_SIGNED_CERT' }, url);
    assert.equal(attempt.responseBody, null);
  }
  assert.equal(handshakes, 2);
  // Only the name went as SNI: a client sends none for an IP literal.
  assert.deepEqual(names, ['localhost']);
});

const TLS_SENDER = new URL('../support/tls-sender.ts', import.meta.url);

test('https to a receiver whose certificate the process trusts: delivered and signed, by name and by IP; a new connection resumes the TLS session', { skip: OPENSSL_SKIP }, async () => {
  const credentials = selfSigned();
  const dir = mkdtempSync(join(tmpdir(), 'webhook-ca-'));
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  const caFile = join(dir, 'ca.pem');
  writeFileSync(caFile, credentials.cert);
  const received: { body: string; headers: http.IncomingHttpHeaders; resumed: boolean }[] = [];
  const server = https.createServer(credentials, (request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      received.push({ body: Buffer.concat(chunks).toString('utf8'), headers: request.headers, resumed: (request.socket as TLSSocket).isSessionReused() });
      // Closing after the first answer: the second delivery must open a connection, and resume the session.
      response.writeHead(received.length === 1 ? 200 : 204, received.length === 1 ? { connection: 'close' } : {}).end(received.length === 1 ? 'ok' : undefined);
    });
  });
  const port = await listening(server);
  const urls = [`https://localhost:${port}/hook`, `https://localhost:${port}/hook`, `https://127.0.0.1:${port}/hook`];
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', TLS_SENDER.pathname, secret, ...urls], {
    env: { ...process.env, NODE_EXTRA_CA_CERTS: caFile },
    timeout: 60_000,
  });
  const attempts = JSON.parse(stdout) as SentAttempt[];
  assert.deepEqual(
    attempts.map((a) => [a.outcome, a.responseBody]),
    [
      [{ status: 200 }, 'ok'],
      [{ status: 204 }, ''],
      [{ status: 204 }, ''],
    ],
  );
  assert.deepEqual(
    received.map((r) => r.resumed),
    [false, true, false],
    'the second connection to localhost resumes its session; 127.0.0.1 is another origin, with a handshake of its own',
  );
  for (const [i, r] of received.entries()) {
    assert.equal(r.headers['webhook-id'], `evt_tls_${i + 1}`);
    const headers = Object.fromEntries(Object.entries(r.headers).map(([name, value]) => [name, String(value)]));
    assert.deepEqual(new Webhook(secret).verify(r.body, headers), JSON.parse(r.body));
  }
});
