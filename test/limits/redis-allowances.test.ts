import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { test, type TestContext } from 'node:test';
import { Redis } from 'ioredis';
import type { SharedAllowances } from '../../src/limits/allowance.js';
import { RateLimiter, WINDOW_MS, windowOffset } from '../../src/limits/rate-limiter.js';
import { redisAllowances } from '../../src/limits/redis-allowances.js';
import { sleep, waitFor } from '../support/process.js';
import { TcpProxy } from '../support/tcp-proxy.js';

/** The two scripts on a real Redis (decisions 7.10), and limiters sharing it. */

const REDIS_URL = process.env.TEST_REDIS_URL || 'redis://127.0.0.1:6379';
const SILENT = { info: () => undefined, warn: () => undefined };

/** A key prefix of the test's own on Redis, its keys removed at the end; `raw` reads them. */
async function prefixed(t: TestContext): Promise<{ prefix: string; raw: Redis }> {
  const prefix = `test-allowances-${randomUUID()}:`;
  const raw = new Redis(REDIS_URL, { keyPrefix: prefix, lazyConnect: true, maxRetriesPerRequest: 1 });
  await raw.connect();
  t.after(async () => {
    const left = await raw.keys(`${prefix}*`);
    if (left.length > 0) await raw.del(...left.map((k) => k.slice(prefix.length)));
    raw.disconnect();
  });
  return { prefix, raw };
}

/** A connection of the service's kind, once it is ready. */
async function shared(t: TestContext, url: string, prefix: string): Promise<SharedAllowances> {
  const s = redisAllowances(url, prefix, SILENT);
  t.after(() => s.close());
  await waitFor(() => s.ready());
  return s;
}

const inAMinute = () => Date.now() + 2 * WINDOW_MS;

test('grants shrink as the window fills, to one request near the limit; none past it', async (t) => {
  const { prefix, raw } = await prefixed(t);
  const redis = await shared(t, REDIS_URL, prefix);
  const grants: number[] = [];
  for (let i = 0; i < 17; i++) {
    const { granted } = await redis.take({ keyId: 'key_g', window: 1, limit: 60, owed: 0, min: 1, want: 100, expireAt: inAMinute() });
    grants.push(granted);
  }
  assert.deepEqual(grants, [15, 11, 8, 6, 5, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1, 0, 0]);
  assert.equal(await raw.get('ratelimit:key_g:1'), '60');
  assert.ok((await raw.pttl('ratelimit:key_g:1')) > WINDOW_MS, 'the total expires after its window');
});

test('a batch is granted all or none; an ask ahead of demand gets nothing near the limit; owed counts are added whatever the total', async (t) => {
  const { prefix } = await prefixed(t);
  const redis = await shared(t, REDIS_URL, prefix);
  const ask = { keyId: 'key_b', window: 2, limit: 10, owed: 0, expireAt: inAMinute() };
  assert.deepEqual(await redis.take({ ...ask, min: 7, want: 7 }), { granted: 7, taken: 7 });
  assert.deepEqual(await redis.take({ ...ask, min: 4, want: 8 }), { granted: 0, taken: 7 }, '3 left: a batch of 4 gets none');
  assert.deepEqual(await redis.take({ ...ask, min: 0, want: 5 }), { granted: 0, taken: 7 }, 'a quarter of 3 is none');
  assert.deepEqual(await redis.take({ ...ask, min: 3, want: 3 }), { granted: 3, taken: 10 });
  assert.deepEqual(await redis.take({ ...ask, owed: 2, min: 0, want: 0 }), { granted: 0, taken: 12 }, 'admitted while Redis was away: counted');
});

test('giving back lowers the total, never below zero, and never makes a window that has expired', async (t) => {
  const { prefix, raw } = await prefixed(t);
  const redis = await shared(t, REDIS_URL, prefix);
  await redis.take({ keyId: 'key_r', window: 3, limit: 60, owed: 0, min: 1, want: 10, expireAt: inAMinute() });
  await redis.giveBack('key_r', 3, 4);
  assert.equal(await raw.get('ratelimit:key_r:3'), '6');
  assert.ok((await raw.pttl('ratelimit:key_r:3')) > 0, 'still expires');
  await redis.giveBack('key_r', 3, 100);
  assert.equal(await raw.get('ratelimit:key_r:3'), '0');
  await redis.giveBack('key_r', 4, 5);
  assert.equal(await raw.exists('ratelimit:key_r:4'), 0);
});

test('two limiters, each with its own connection, 130 requests at once on one key: exactly the limit admitted', async (t) => {
  const { prefix } = await prefixed(t);
  const limiters = [new RateLimiter(60, await shared(t, REDIS_URL, prefix)), new RateLimiter(60, await shared(t, REDIS_URL, prefix))];
  t.after(() => Promise.all(limiters.map((l) => l.close())));
  // One window holds the run: at least 5 s of the key's window left.
  const sinceStart = (Date.now() - windowOffset('key_x')) % WINDOW_MS;
  if (sinceStart > WINDOW_MS - 5000) await new Promise((r) => setTimeout(r, WINDOW_MS - sinceStart + 50));
  const decisions = await Promise.all([...Array<number>(130)].map((_, i) => limiters[i % 2]!.take('key_x')));
  const admitted = decisions.filter((d) => d.admitted);
  assert.equal(admitted.length, 60);
  assert.ok(decisions.filter((d, i) => d.admitted && i % 2 === 0).length > 0 && decisions.filter((d, i) => d.admitted && i % 2 === 1).length > 0);
  assert.equal(new Set(admitted.map((d) => d.remaining)).has(0), true, 'the last admitted saw none left');
});

test('Redis that accepts connections and never answers: the limiter decides alone at once', async (t) => {
  const sockets = new Set<Socket>();
  const silent = createServer((s) => sockets.add(s));
  await new Promise<void>((done) => silent.listen(0, '127.0.0.1', done));
  t.after(() => {
    for (const s of sockets) s.destroy();
    silent.close();
  });
  const redis = redisAllowances(`redis://127.0.0.1:${(silent.address() as AddressInfo).port}`, 'never:', SILENT);
  const rl = new RateLimiter(2, redis);
  t.after(() => rl.close());
  await waitFor(() => sockets.size > 0);
  assert.equal(redis.ready(), false);
  assert.deepEqual([rl.takeNow('key_n')?.admitted, rl.takeNow('key_n')?.admitted, rl.takeNow('key_n')?.admitted], [true, true, false]);
});

test('Redis that stops answering mid-way: the waiting request is decided alone after the step times out, and the next ones at once', async (t) => {
  const { prefix, raw } = await prefixed(t);
  const url = new URL(REDIS_URL);
  const proxy = new TcpProxy({ host: url.hostname, port: Number(url.port || 6379) });
  await proxy.start();
  t.after(() => proxy.cut());
  const rl = new RateLimiter(100, await shared(t, `redis://127.0.0.1:${proxy.port}`, prefix));
  t.after(() => rl.close());
  assert.equal((await rl.take('key_z')).admitted, true);
  proxy.freeze();
  // Whatever allowance the first step brought is used up here, so the next request has to ask.
  let held = 0;
  while (rl.takeNow('key_z') !== undefined) held++;
  const waited = await rl.take('key_z');
  assert.equal(waited.admitted, true, 'decided alone once the step failed');
  assert.equal(rl.takeNow('key_z')?.admitted, true, 'and the next at once, without waiting on Redis');
  proxy.thaw();
  // Once Redis answers again, what was admitted alone is added to the window's total.
  const window = Math.floor((Date.now() - windowOffset('key_z')) / WINDOW_MS);
  const admitted = 1 + held + 2;
  for (let i = 0; i < 200 && Number(await raw.get(`ratelimit:key_z:${window}`)) < admitted; i++) {
    rl.sweep();
    await sleep(25);
  }
  assert.ok(Number(await raw.get(`ratelimit:key_z:${window}`)) >= admitted);
});
