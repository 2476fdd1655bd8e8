import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { spawnChild, TSX_NODE } from '../../bench/processes.js';

/** Each test's bound: a sender that never finishes fails the test rather than hanging the run. */
const TEST = { timeout: 30_000 };

const EVENT = '{"id":"evt_1","type":"inventory.updated","data":{"petId":"1","quantity":2}}';

/** A receiver answering each POST with `status`, and what it received: each request's signature headers and body. */
async function receiver(status: number) {
  const received: { id: string | undefined; signature: string | undefined; body: string }[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      received.push({ id: req.headers['webhook-id'] as string | undefined, signature: req.headers['webhook-signature'] as string | undefined, body });
      res.writeHead(status).end();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`, received, close: () => server.close() };
}

const send = (url: string, count: number) =>
  spawnChild([...TSX_NODE, 'bench/bare-sender.ts'], { env: { ...process.env, HOOK_URL: url, BARE_EVENT: EVENT, COUNT: String(count) } });

test('bare-sender: delivers the event COUNT times, one at a time, signed, and prints what it took', TEST, async () => {
  const hooks = await receiver(204);
  try {
    const sender = send(hooks.url, 25);
    assert.equal(await sender.exited, '0', sender.output());
    const printed = JSON.parse(sender.output().trim().split('\n').at(-1)!) as Record<string, number>;
    assert.equal(printed.deliveries, 25);
    assert.ok(printed.seconds! > 0 && printed.cpuUs! > 0, JSON.stringify(printed));
    assert.equal(hooks.received.length, 25);
    assert.deepEqual(
      hooks.received.map((r) => r.id),
      Array.from({ length: 25 }, (_, i) => `evt_${i}`),
    );
    for (const r of hooks.received) {
      assert.equal(r.body, EVENT);
      assert.match(r.signature ?? '', /^v1,[A-Za-z0-9+/]{43}=$/);
    }
  } finally {
    hooks.close();
  }
});

test('bare-sender: an answer that is not 2xx stops it with exit code 1', TEST, async () => {
  const hooks = await receiver(500);
  try {
    const sender = send(hooks.url, 5);
    assert.equal(await sender.exited, '1');
    assert.match(sender.output(), /the endpoint answered 500/);
    assert.equal(hooks.received.length, 1, 'nothing is sent after the refused delivery');
  } finally {
    hooks.close();
  }
});
