import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { describe, test } from 'node:test';
import { promisify } from 'node:util';
import { BACKENDS, backendSkip, createTestDatabase } from './support/backends.js';
import { StreamClient } from './support/event-stream.js';
import { BIN, halfSentPatch, sleep, startServerProcess, waitFor } from './support/process.js';

const run = promisify(execFile);

for (const backend of BACKENDS) {
  describe(`server on ${backend}`, { skip: await backendSkip(backend) }, () => {
    test('first run: prints one write key with curl lines that work as printed; later runs print none', async (t) => {
      const env = { DATABASE_URL: (await createTestDatabase(backend, t)).databaseUrl };
      const server = await startServerProcess(t, env, ['--demo']);
      await waitFor(() => server.stderr().includes('curl -s -X PATCH'));
      const banner = server.stderr();
      const key = /^ {4}(inv_live_\S+)$/m.exec(banner)?.[1];
      assert.ok(key, banner);
      assert.equal(key.length, 'inv_live_'.length + 43, '256 random bits, base64url');
      assert.ok(!server.stdout().includes(key), 'the key never reaches the JSON log');

      // Run the printed curl lines, as a new user would paste them.
      const curlLines = [...banner.matchAll(/^ {4}(curl .*)$/gm)].map((m) => m[1]!);
      assert.equal(curlLines.length, 2);
      for (const line of curlLines) {
        const { stdout } = await run('sh', ['-c', line.replace(/localhost:\d+/, `127.0.0.1:${server.port}`) + ' -w "\\n%{http_code}"']);
        assert.match(stdout, /\n200$/, `${line}\n${stdout}`);
      }
      const list = await fetch(`${server.baseUrl}/v1/inventory`, { headers: { authorization: `Bearer ${key}` } });
      assert.match(await list.text(), /^\[\{"petId":1,"quantity":5,"status":"available","reserved":0,"available":5\}/);
      // The dashboard and the API reference, at the addresses the banner names.
      const pages = [...banner.matchAll(/^(The staff dashboard|The API reference)\b.*: (http:\/\/\S+)$/gm)].map((m) => m[2]!);
      assert.deepEqual(pages.map((url) => new URL(url).pathname), ['/dashboard', '/docs'], banner);
      for (const url of pages) {
        const page = await fetch(url.replace(/localhost:\d+/, `127.0.0.1:${server.port}`));
        assert.equal(page.status, 200, url);
        assert.match(page.headers.get('content-type') ?? '', /^text\/html/, url);
        await page.arrayBuffer();
      }

      server.proc.kill('SIGTERM');
      assert.equal(await server.exited, 0);
      const again = await startServerProcess(t, env, ['--demo']);
      await fetch(`${again.baseUrl}/healthz`);
      assert.ok(!again.stderr().includes('inv_live_'), 'no second key');
      const stillWorks = await fetch(`${again.baseUrl}/v1/inventory`, { headers: { authorization: `Bearer ${key}` } });
      assert.equal(stillWorks.status, 200);
    });

    test('first run on an empty store says how to add a pet before the PATCH works', async (t) => {
      const server = await startServerProcess(t, { DATABASE_URL: (await createTestDatabase(backend, t)).databaseUrl });
      await waitFor(() => server.stderr().includes('pets add'));
      assert.match(server.stderr(), /\.\/bin\/petstore-inventory pets add --pet-id 1 --status available --quantity 3/);
      assert.match(server.stderr(), /npm start -- --demo/);
    });

    test('SIGTERM: an in-flight PATCH finishes with 200, then the store closes and the process exits 0', async (t) => {
      const env = { DATABASE_URL: (await createTestDatabase(backend, t)).databaseUrl };
      const key = await createKey(env);
      await run(BIN, ['pets', 'add', '--pet-id', '7', '--status', 'available', '--quantity', '1'], { env: { ...process.env, ...env } });
      const server = await startServerProcess(t, env);

      // Send the headers and half the body, signal, then finish the body.
      const patch = await halfSentPatch(server.port, '/v1/inventory/7', key, '{"quantity": 42}');
      await sleep(200);
      server.proc.kill('SIGTERM');
      // The drain (none here) ends a turn or more after the signal's first line: wait for the listener to close.
      await waitFor(() => server.stdout().includes('no longer listening'));
      // New connections are refused while the in-flight request is still open.
      await assert.rejects(fetch(`${server.baseUrl}/healthz`));
      patch.finish();
      await patch.closed;
      assert.match(patch.response(), /^HTTP\/1\.1 200 /);
      assert.match(patch.response(), /\{"petId":7,"quantity":42,"status":"available","reserved":0,"available":42\}$/);
      assert.equal(await server.exited, 0);
      assert.match(server.stdout(), /shut down cleanly/);
      const { stdout } = await run(BIN, ['pets', 'list', '--json'], { env: { ...process.env, ...env } });
      assert.match(stdout, /"quantity":42/, 'the acknowledged write is on disk');
    });

    test('SIGINT stops it cleanly too', async (t) => {
      const server = await startServerProcess(t, { DATABASE_URL: (await createTestDatabase(backend, t)).databaseUrl });
      server.proc.kill('SIGINT');
      assert.equal(await server.exited, 0);
    });
  });
}

// About logging, not the store: once, on SQLite.
test('logs are JSON lines; request lines carry the request id; Authorization never appears', async (t) => {
  const env = { DATABASE_URL: (await createTestDatabase('sqlite', t)).databaseUrl };
  const key = await createKey(env);
  const server = await startServerProcess(t, env);
  await fetch(`${server.baseUrl}/v1/inventory`, { headers: { authorization: `Bearer ${key}`, 'x-request-id': 'log-check-1' } });
  await fetch(`${server.baseUrl}/v1/inventory`, { headers: { authorization: `Bearer ${key}x`, 'x-request-id': 'log-check-2' } });
  server.proc.kill('SIGTERM');
  await server.exited;
  const lines = server.stdout().trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.ok(lines.filter((l) => l.requestId === 'log-check-1').length >= 2);
  assert.ok(lines.filter((l) => l.requestId === 'log-check-2').length >= 2);
  assert.ok(lines.filter((l) => l.req !== undefined || l.res !== undefined).every((l) => typeof l.requestId === 'string'));
  assert.ok(!server.stdout().includes(key.slice(9)), 'key in logs');
});

test('a bad setting stops the process with a message naming it', async () => {
  await assert.rejects(run(BIN, ['serve'], { env: { ...process.env, PORT: 'eighty' } }), (err: { code: number; stderr: string }) => {
    assert.equal(err.code, 2);
    assert.match(err.stderr, /PORT must be a whole number/);
    return true;
  });
  await assert.rejects(run(BIN, ['serve', '--log-level', 'chatty']), (err: { code: number; stderr: string }) => {
    assert.match(err.stderr, /LOG_LEVEL must be one of/);
    return err.code === 2;
  });
});

test('a port in use: one line naming it and how to choose another, no stack, exit 1; METRICS_PORT alike', async (t) => {
  const taken = createServer();
  await new Promise<void>((done) => taken.listen(0, '127.0.0.1', done));
  t.after(() => taken.close());
  const port = (taken.address() as AddressInfo).port;
  const env = { ...process.env, DATABASE_URL: (await createTestDatabase('sqlite', t)).databaseUrl, HOST: '127.0.0.1' };
  const failures: [Record<string, string>, string][] = [
    [{ PORT: String(port) }, `petstore-inventory: port ${port} is already in use; choose another: PORT=${port + 1} npm start (or serve --port ${port + 1})\n`],
    [{ PORT: '0', METRICS_PORT: String(port), METRICS_HOST: '127.0.0.1' }, `petstore-inventory: metrics port ${port} is already in use; choose another: METRICS_PORT=${port + 1}\n`],
  ];
  for (const [settings, line] of failures) {
    await assert.rejects(run(BIN, ['serve'], { env: { ...env, ...settings } }), (err: { code: number; stderr: string }) => {
      assert.equal(err.code, 1);
      assert.equal(err.stderr, line);
      return true;
    });
  }
});

/** A drain far longer than any test here may take: a process that waited it out would hit the test's timeout. */
const LONG_DRAIN = { SHUTDOWN_DRAIN_MS: '60000' };

// About shutting down, not the store: once, on SQLite.
test('stopping an idle server: with no connection open the drain ends at once, and it exits 0 (decisions 7.5)', { timeout: 20_000 }, async (t) => {
  const server = await startServerProcess(t, { DATABASE_URL: (await createTestDatabase('sqlite', t)).databaseUrl, ...LONG_DRAIN });
  server.proc.kill('SIGTERM');
  assert.equal(await server.exited, 0);
  assert.match(server.stdout(), /"connections":0,"msg":"shutting down: draining connections"/);
  assert.match(server.stdout(), /shut down cleanly/);
});

test('stopping an idle server with SHUTDOWN_MIN_DRAIN_MS: it goes on listening and answering, /readyz 503, until the minimum is over, then exits 0 (decisions 7.5)', { timeout: 30_000 }, async (t) => {
  // Far longer than the steps below take; the drain's own maximum longer still, so it is the minimum that ends the drain.
  const server = await startServerProcess(t, { DATABASE_URL: (await createTestDatabase('sqlite', t)).databaseUrl, ...LONG_DRAIN, SHUTDOWN_MIN_DRAIN_MS: '5000' });
  await waitFor(() => /^ {4}inv_live_\S+$/m.test(server.stderr()));
  const key = /^ {4}(inv_live_\S+)$/m.exec(server.stderr())![1]!;
  server.proc.kill('SIGTERM');
  await waitFor(() => server.stdout().includes('shutting down: draining connections'));
  assert.match(server.stdout(), /"connections":0,"msg":"shutting down: draining connections"/, 'no connection was open at the signal');
  // No connection open, yet the listener stays open: /readyz says 503, and a request sent now is answered as usual.
  const ready = await keepAliveConnection(server.port);
  assert.match(await ready.get('/readyz'), /^HTTP\/1\.1 503 .*\r\nconnection: close\r\n/is);
  await ready.closed;
  const answer = await fetch(`${server.baseUrl}/v1/inventory`, { headers: { authorization: `Bearer ${key}` } });
  assert.equal(answer.status, 200, 'a request after the signal is answered, not refused');
  await answer.arrayBuffer();
  assert.doesNotMatch(server.stdout(), /no longer listening/, 'still listening after /readyz turned 503');
  assert.equal(await server.exited, 0);
  const log = server.stdout();
  assert.ok(log.indexOf('no longer listening') > log.indexOf('shutting down: draining connections'), 'then it stopped listening');
  assert.match(log, /shut down cleanly/);
});

test('stopping a server with an idle keep-alive connection and a request in flight: the request is answered whole, the idle connection closed, and it exits without waiting out SHUTDOWN_DRAIN_MS (decisions 7.5)', { timeout: 30_000 }, async (t) => {
  // The drain's time (60 s) is twice the test's: a process that waited it out would fail the test by its timeout.
  const server = await startServerProcess(t, { DATABASE_URL: (await createTestDatabase('sqlite', t)).databaseUrl, ...LONG_DRAIN }, ['--demo']);
  await waitFor(() => /^ {4}inv_live_\S+$/m.test(server.stderr()));
  const key = /^ {4}(inv_live_\S+)$/m.exec(server.stderr())![1]!;
  // A dashboard tab's connection: kept alive after its answer, idle since.
  const idle = await keepAliveConnection(server.port);
  assert.match(await idle.get('/healthz'), /^HTTP\/1\.1 200 .*\r\nconnection: keep-alive\r\n/is);
  let idleReadAfterAnswer = 0;
  idle.socket.on('data', (chunk: Buffer) => (idleReadAfterAnswer += chunk.length));
  // A request in flight: its headers and part of its body sent.
  const inFlight = await halfSentPatch(server.port, '/v1/inventory/1', key, '{"quantity": 9}');

  server.proc.kill('SIGTERM');
  await waitFor(() => server.stdout().includes('shutting down: draining connections'));
  assert.match(server.stdout(), /"connections":2,"msg":"shutting down: draining connections"/);
  // The idle connection is closed by the server, with nothing sent on it.
  await idle.closed;
  assert.equal(idleReadAfterAnswer, 0);
  // The request in flight keeps the drain going: the listener is still open, a new connection answered, /readyz 503.
  assert.equal(server.proc.exitCode, null, 'the request in flight keeps the process running');
  const ready = await keepAliveConnection(server.port);
  assert.match(await ready.get('/readyz'), /^HTTP\/1\.1 503 .*\r\nconnection: close\r\n/is);
  await ready.closed;

  // The rest of its body: answered whole, then the connection closes, and the process exits.
  inFlight.finish();
  await inFlight.closed;
  const answer = inFlight.response();
  const head = answer.slice(0, answer.indexOf('\r\n\r\n'));
  const body = answer.slice(head.length + 4);
  assert.match(head, /^HTTP\/1\.1 200 /);
  assert.equal(Buffer.byteLength(body), Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1]), 'the whole body');
  assert.deepEqual(JSON.parse(body), { petId: 1, quantity: 9, status: 'available', reserved: 0, available: 9 });
  assert.equal(await server.exited, 0);
  const log = server.stdout();
  assert.match(log, /shut down cleanly/);
  assert.doesNotMatch(log, /shutdown timed out/);
});

test('stopping a server with event streams open: the drain ends them at once, cleanly, and exits 0 without waiting for them (decisions 7.8)', { timeout: 30_000 }, async (t) => {
  const server = await startServerProcess(t, { DATABASE_URL: (await createTestDatabase('sqlite', t)).databaseUrl, ...LONG_DRAIN });
  await waitFor(() => /^ {4}inv_live_\S+$/m.test(server.stderr()));
  const key = /^ {4}(inv_live_\S+)$/m.exec(server.stderr())![1]!;
  const streams = await Promise.all([1, 2].map(() => new StreamClient(server.baseUrl, { key }).opened()));
  t.after(() => streams.forEach((s) => s.close()));
  assert.deepEqual(streams.map((s) => s.status), [200, 200]);
  server.proc.kill('SIGTERM');
  // Ended by the server (the stream's end, not a reset connection), so each client reconnects elsewhere at once.
  assert.deepEqual(await Promise.all(streams.map((s) => s.ended)), ['end', 'end']);
  assert.equal(await server.exited, 0);
  assert.match(server.stdout(), /shut down cleanly/);
});

/** A raw keep-alive connection: `get` sends one request and resolves with its whole answer. */
async function keepAliveConnection(port: number): Promise<{ get: (path: string) => Promise<string>; closed: Promise<unknown>; socket: Socket }> {
  const socket = connect(port, '127.0.0.1');
  const closed = new Promise((done) => socket.on('close', done));
  await new Promise((done) => socket.once('connect', done));
  const get = (path: string) =>
    new Promise<string>((done) => {
      let answer = '';
      const read = (chunk: Buffer) => {
        answer += chunk.toString('latin1');
        const end = answer.indexOf('\r\n\r\n');
        const length = Number(/\r\ncontent-length: (\d+)/i.exec(answer)?.[1] ?? -1);
        if (end < 0 || length < 0 || answer.length < end + 4 + length) return;
        socket.off('data', read);
        done(answer);
      };
      socket.on('data', read);
      socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
    });
  return { get, closed, socket };
}

async function createKey(env: Record<string, string>): Promise<string> {
  const { stdout } = await run(BIN, ['keys', 'create', '--name', 'test', '--scope', 'inventory:write'], { env: { ...process.env, ...env } });
  return stdout.trim();
}


