import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RateLimiter, WINDOW_MS, windowOffset, type SharedCounts, type WindowCount } from '../../src/limits/rate-limiter.js';

/** The first instant of `keyId`'s window number `n`. */
function windowStart(keyId: string, n: number): number {
  return n * WINDOW_MS + windowOffset(keyId);
}

/** A Redis stand-in: totals per key and window, added to by every limiter that shares it; `down` refuses. */
class FakeShared implements SharedCounts {
  readonly totals = new Map<string, number>();
  readonly batches: WindowCount[][] = [];
  down = false;
  /** The batches sent and not answered yet; `answer()` answers them. */
  readonly #waiting: (() => void)[] = [];

  ready(): boolean {
    return !this.down;
  }

  add(batch: readonly WindowCount[]): Promise<number[]> {
    this.batches.push([...batch]);
    return new Promise((resolve, reject) => {
      this.#waiting.push(() => {
        if (this.down) return reject(new Error('down'));
        resolve(
          batch.map(({ keyId, window, count }) => {
            const name = `${keyId}:${window}`;
            const total = (this.totals.get(name) ?? 0) + count;
            this.totals.set(name, total);
            return total;
          }),
        );
      });
    });
  }

  /** Answers every batch sent so far, and lets the limiters see the answers. */
  async answer(): Promise<void> {
    for (const done of this.#waiting.splice(0)) done();
    await new Promise((resolve) => setImmediate(resolve));
  }

  async close(): Promise<void> {}
}

/** A limiter that syncs only when the test says (its timer far away). */
function limiter(limit: number, shared?: SharedCounts): RateLimiter {
  return new RateLimiter(limit, shared, 3_600_000);
}

test('the limit+1-th request of a window is the first refused; remaining counts down; the next window starts afresh', async (t) => {
  const rl = limiter(3);
  t.after(() => rl.close());
  const start = windowStart('key_a', 1000);
  const seen = [1, 2, 3, 4, 5].map((i) => {
    const d = rl.take('key_a', start + i * 1000);
    return [d.admitted, d.remaining, d.resetSeconds];
  });
  assert.deepEqual(seen, [
    [true, 2, 59],
    [true, 1, 58],
    [true, 0, 57],
    [false, 0, 56],
    [false, 0, 55],
  ]);
  assert.equal(rl.policyHeader, '"default";q=3;w=60');
  assert.equal(rl.rateLimitHeader(rl.take('key_a', start + 59_999)), '"default";r=0;t=1');
  const next = rl.take('key_a', start + WINDOW_MS);
  assert.deepEqual([next.admitted, next.remaining, next.resetSeconds], [true, 2, 60]);
  assert.equal(rl.take('key_b', start).admitted, true, 'each key has its own count');
});

test('windows are spread over the minute by key id, the same on every instance', () => {
  const offsets = new Set(['key_1', 'key_2', 'key_3', 'key_4'].map(windowOffset));
  assert.equal(offsets.size, 4);
  for (const o of offsets) assert.ok(o >= 0 && o < WINDOW_MS);
  assert.equal(windowOffset('key_1'), windowOffset('key_1'));
});

test('two limiters sharing counts: each learns the other\'s count at the next round', async (t) => {
  const redis = new FakeShared();
  const a = limiter(10, redis);
  const b = limiter(10, redis);
  t.after(async () => {
    await a.close();
    await b.close();
  });
  const now = windowStart('key_s', 5000) + 1000;
  for (let i = 0; i < 4; i++) assert.equal(a.take('key_s', now).admitted, true);
  for (let i = 0; i < 4; i++) assert.equal(b.take('key_s', now).admitted, true);
  a.sync();
  b.sync();
  assert.deepEqual(redis.batches.map((batch) => batch.map((c) => c.count)), [[4], [4]]);
  assert.equal(redis.batches[0]![0]!.expireAt, windowStart('key_s', 5001) + WINDOW_MS, 'the total outlives its window');
  await redis.answer();
  // a's round was answered first (4 in all), b's second (8 in all): b knows every count, a only its own so far.
  assert.equal(b.take('key_s', now).remaining, 1);
  assert.equal(b.take('key_s', now).remaining, 0);
  assert.equal(b.take('key_s', now).admitted, false);
  assert.equal(a.take('key_s', now).remaining, 5, 'a admits what it receives until its next round: the overshoot');
  a.sync();
  b.sync();
  await redis.answer();
  assert.equal(redis.totals.get('key_s:5000'), 11, 'one over the limit: what a admitted within one round');
  // a's round was answered before b's added its 2: a knows 9, so it admits one more and no further.
  assert.equal(a.take('key_s', now).remaining, 0);
  assert.equal(a.take('key_s', now).admitted, false);
  assert.equal(b.take('key_s', now).admitted, false);
});

test('while Redis is away the counts stay local (fail open) and are sent once it is back', async (t) => {
  const redis = new FakeShared();
  const rl = limiter(100, redis);
  t.after(() => rl.close());
  const now = windowStart('key_d', 7000) + 10;
  redis.down = true;
  for (let i = 0; i < 5; i++) rl.take('key_d', now);
  rl.sync();
  assert.equal(redis.batches.length, 0, 'nothing sent while not connected');
  assert.equal(rl.take('key_d', now).remaining, 94, 'still counted here');
  redis.down = false;
  rl.sync();
  await redis.answer();
  assert.deepEqual(redis.batches.map((batch) => batch.map((c) => c.count)), [[6]]);
  assert.equal(rl.take('key_d', now).remaining, 93);
});

test('a round that fails keeps its counts here and never sends them twice', async (t) => {
  const redis = new FakeShared();
  const rl = limiter(100, redis);
  t.after(() => rl.close());
  const now = windowStart('key_f', 9000) + 10;
  for (let i = 0; i < 3; i++) rl.take('key_f', now);
  rl.sync();
  redis.down = true;
  await redis.answer();
  redis.down = false;
  assert.equal(rl.take('key_f', now).remaining, 96);
  rl.sync();
  await redis.answer();
  assert.deepEqual(redis.batches.map((batch) => batch.map((c) => c.count)), [[3], [1]]);
  assert.equal(rl.take('key_f', now).remaining, 95, 'the failed 3 are still counted, though Redis holds only 1');
});

test('one round at a time; an answer about a window that rolled over is ignored', async (t) => {
  const redis = new FakeShared();
  const rl = limiter(100, redis);
  t.after(() => rl.close());
  const start = windowStart('key_r', 3000);
  rl.take('key_r', start + 59_000);
  rl.sync();
  rl.take('key_r', start + 59_500);
  rl.sync();
  assert.equal(redis.batches.length, 1, 'the second round waits for the first');
  redis.totals.set('key_r:3000', 50);
  assert.equal(rl.take('key_r', start + WINDOW_MS).remaining, 99, 'a new window');
  await redis.answer();
  assert.equal(rl.take('key_r', start + WINDOW_MS).remaining, 98, 'the old window\'s total does not count in the new one');
});

test('take(count) counts several requests at once, all or none: a batch that does not fit takes nothing (decisions 5.12)', () => {
  const limiter = new RateLimiter(5);
  const at = windowStart('key_b', 10);
  assert.equal(limiter.take('key_b', at).remaining, 4);
  const batch = limiter.take('key_b', at, 3);
  assert.deepEqual([batch.admitted, batch.remaining], [true, 1]);
  const tooMany = limiter.take('key_b', at, 2);
  assert.deepEqual([tooMany.admitted, tooMany.remaining], [false, 1], 'refused, what is left stays as it was');
  assert.equal(limiter.take('key_b', at, 1).admitted, true, 'the refusal took nothing');
  assert.equal(limiter.take('key_b', at).admitted, false);
});
