import assert from 'node:assert/strict';
import { lookup as dnsLookup } from 'node:dns';
import { once } from 'node:events';
import net, { type AddressInfo, type Socket } from 'node:net';
import { after, test } from 'node:test';
import { Client } from 'undici';
import { RefusedAddressError } from '../../src/webhooks/address-guard.js';
import { guardedConnector } from '../../src/webhooks/guarded-connector.js';

/** A TCP server on 127.0.0.1 that counts connections and the bytes they carried, closed when the tests end. */
async function listener() {
  const seen = { connections: 0, bytes: 0 };
  const sockets = new Set<Socket>();
  const server = net.createServer((socket) => {
    seen.connections++;
    sockets.add(socket);
    socket.on('data', (chunk: Buffer) => (seen.bytes += chunk.length));
    socket.on('error', () => undefined);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  after(() => {
    for (const socket of sockets) socket.destroy();
    server.close();
  });
  return { port: (server.address() as AddressInfo).port, seen };
}

/** What a connector hands undici for `http://HOST:PORT`: the socket, or the error. */
function connect(connector: ReturnType<typeof guardedConnector>, hostname: string, port: number): Promise<{ socket: Socket } | { error: Error }> {
  return new Promise((resolve) => {
    connector({ hostname, host: `${hostname}:${port}`, protocol: 'http:', port: String(port) }, (error, socket) => {
      if (error !== null) resolve({ error });
      else resolve({ socket });
    });
  });
}

test('a name resolving to loopback is refused at its lookup: no connection is made', async () => {
  const { port, seen } = await listener();
  const result = await connect(guardedConnector({ allowPrivate: false, timeoutMs: 5000 }), 'localhost', port);
  assert.ok('error' in result && result.error instanceof RefusedAddressError, JSON.stringify(result));
  assert.match(result.error.message, /^refused: localhost resolves to (127\.0\.0\.1|::1), a private address/);
  assert.equal(seen.connections, 0);
});

test('whatever the lookup said, the address connected to is checked, and the socket closed before a byte is written', async () => {
  const { port, seen } = await listener();
  // An unguarded lookup stands for any path to a socket that skipped the first check.
  const result = await connect(guardedConnector({ allowPrivate: false, timeoutMs: 5000, lookup: dnsLookup }), 'localhost', port);
  assert.ok('error' in result && result.error instanceof RefusedAddressError, JSON.stringify(result));
  assert.match(result.error.message, /^refused: localhost resolves to 127\.0\.0\.1, a private address/);
  while (seen.connections === 0) await new Promise((resolve) => setTimeout(resolve, 5));
  assert.equal(seen.bytes, 0);
});

test('the same check holds for undici itself: a request through the connector is refused, and nothing is sent', async () => {
  const { port, seen } = await listener();
  const client = new Client(`http://127.0.0.1:${port}`, { connect: guardedConnector({ allowPrivate: false, timeoutMs: 5000, lookup: dnsLookup }) });
  after(() => client.destroy());
  await assert.rejects(client.request({ path: '/hook', method: 'POST', body: '{}' }), (error: Error) => error instanceof RefusedAddressError);
  assert.equal(seen.bytes, 0);
});

test('with WEBHOOKS_ALLOW_PRIVATE=true a loopback receiver is connected to', async () => {
  const { port, seen } = await listener();
  const result = await connect(guardedConnector({ allowPrivate: true, timeoutMs: 5000 }), 'localhost', port);
  assert.ok('socket' in result);
  result.socket.end('x');
  while (seen.bytes === 0) await new Promise((resolve) => setTimeout(resolve, 5));
  assert.equal(seen.connections, 1);
});
