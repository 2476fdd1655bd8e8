import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test, type TestContext } from 'node:test';
import type { BareSenderReport } from '../../bench/bare-sender-input.js';
import { spawnChild, TSX_NODE } from '../../bench/processes.js';
import { newWebhookSecret } from '../../src/webhooks/secret.js';

/** Each test's bound: a sender that never finishes fails the test rather than hanging the run. */
const TEST = { timeout: 30_000 };

const EVENT = '{"id":"evt_1","type":"inventory.updated","data":{"petId":"1","quantity":2}}';

const SECRET = newWebhookSecret();

/**
 * A receiver answering each POST with `status` a few milliseconds after its body arrived, and what
 * it received: each request's Standard Webhooks headers and body, and the most requests it held at once.
 */
async function receiver(status: number) {
  const received: { headers: IncomingHttpHeaders; body: string }[] = [];
  let open = 0;
  const seen = { mostAtOnce: 0 };
  const server = createServer((req, res) => {
    seen.mostAtOnce = Math.max(seen.mostAtOnce, ++open);
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      setTimeout(() => {
        open--;
        res.writeHead(status).end();
      }, 5);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`, received, seen, close: () => server.close() };
}

/** The bare senders: the file, and how many of COUNT deliveries it times (the undici one leaves out its first, which connects). */
const SENDERS = [
  { file: 'bench/bare-sender.ts', timed: (count: number) => count },
  { file: 'bench/bare-sender-undici.ts', timed: (count: number) => count - 1 },
];

/** A bare sender run to its end against a receiver answering `status`: how it exited, what it printed, what the receiver got. */
async function run(t: TestContext, file: string, status: number, count: number, warmup?: number, more: NodeJS.ProcessEnv = {}) {
  const hooks = await receiver(status);
  t.after(() => hooks.close());
  const sender = spawnChild([...TSX_NODE, file], {
    env: { ...process.env, HOOK_URL: hooks.url, BARE_EVENT: EVENT, COUNT: String(count), BARE_SECRET: SECRET, ...(warmup !== undefined && { BARE_WARMUP: String(warmup) }), ...more },
  });
  const how = await sender.exited;
  return { how, output: sender.output(), received: hooks.received, seen: hooks.seen };
}

for (const { file, timed } of SENDERS) {
  test(`${file}: delivers the event COUNT times, one at a time, signed to Standard Webhooks, and prints what it took`, TEST, async (t) => {
    const before = Math.floor(Date.now() / 1000);
    const { how, output, received, seen } = await run(t, file, 204, 25);
    assert.equal(how, '0', output);
    const printed = JSON.parse(output.trim().split('\n').at(-1)!) as BareSenderReport;
    assert.equal(printed.deliveries, timed(25));
    assert.ok(printed.seconds > 0 && printed.cpuUs > 0, JSON.stringify(printed));
    assert.equal(received.length, 25);
    assert.equal(seen.mostAtOnce, 1, 'the next delivery is sent only once the last was answered');
    assert.deepEqual(
      received.map((r) => r.headers['webhook-id']),
      Array.from({ length: 25 }, (_, i) => `evt_${i}`),
    );
    const key = Buffer.from(SECRET.slice('whsec_'.length), 'base64');
    for (const { headers, body } of received) {
      assert.equal(body, EVENT);
      const timestamp = Number(headers['webhook-timestamp']);
      assert.ok(timestamp >= before && timestamp <= Math.ceil(Date.now() / 1000), `webhook-timestamp ${timestamp}`);
      const id = headers['webhook-id'] as string;
      const expected = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64');
      assert.equal(headers['webhook-signature'], `v1,${expected}`);
    }
  });

  test(`${file}: the BARE_WARMUP first deliveries go before the timing, and only the rest are counted`, TEST, async (t) => {
    const { how, output, received } = await run(t, file, 204, 12, 5);
    assert.equal(how, '0', output);
    assert.equal((JSON.parse(output.trim().split('\n').at(-1)!) as BareSenderReport).deliveries, 7);
    assert.equal(received.length, 12);
  });

  test(`${file}: a COUNT that is not a positive integer is refused before anything is sent`, TEST, async (t) => {
    const { how, output, received } = await run(t, file, 204, 0);
    assert.notEqual(how, '0');
    assert.match(output, /COUNT must be a positive integer/);
    assert.equal(received.length, 0);
  });

  test(`${file}: an answer that is not 2xx stops it with exit code 1`, TEST, async (t) => {
    const { how, output, received } = await run(t, file, 500, 5);
    assert.equal(how, '1');
    assert.match(output, /the endpoint answered 500/);
    assert.equal(received.length, 1, 'nothing is sent after the refused delivery');
  });
}

test('bench/bare-sender-undici.ts: with BARE_IN_FLIGHT the timed deliveries go that many at a time, each event once', TEST, async (t) => {
  const { how, output, received, seen } = await run(t, 'bench/bare-sender-undici.ts', 204, 41, 1, { BARE_IN_FLIGHT: '4' });
  assert.equal(how, '0', output);
  assert.equal((JSON.parse(output.trim().split('\n').at(-1)!) as BareSenderReport).deliveries, 40);
  assert.equal(seen.mostAtOnce, 4, 'four open at once, never more');
  assert.deepEqual(received.map((r) => r.headers['webhook-id']).sort(), Array.from({ length: 41 }, (_, i) => `evt_${i}`).sort());
});
