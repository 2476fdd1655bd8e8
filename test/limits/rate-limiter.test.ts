import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Allowance, AllowanceAsk, SharedAllowances } from '../../src/limits/allowance.js';
import { IDLE_RETURN_MS, RateLimiter, WINDOW_MS, windowOffset, type RateDecision } from '../../src/limits/rate-limiter.js';

/** The first instant of `keyId`'s window number `n`. */
function windowStart(keyId: string, n: number): number {
  return n * WINDOW_MS + windowOffset(keyId);
}

/** A clock the test moves. */
function clockAt(ms: number): { now: () => number; set: (ms: number) => void } {
  let at = ms;
  return { now: () => at, set: (next) => (at = next) };
}

/**
 * A shared store that answers when the test says, so the order of steps is the test's. Its
 * arithmetic is the script's, applied to the asks it was given; `down` refuses them.
 */
class HeldShared implements SharedAllowances {
  readonly totals = new Map<string, number>();
  readonly asks: AllowanceAsk[] = [];
  readonly givenBack: number[] = [];
  readonly granted: number[] = [];
  connected = true;
  down = false;
  readonly #waiting: (() => void)[] = [];

  ready(): boolean {
    return this.connected;
  }

  take(ask: AllowanceAsk): Promise<Allowance> {
    this.asks.push({ ...ask });
    return new Promise((resolve, reject) => {
      this.#waiting.push(() => {
        if (this.down) return reject(new Error('down'));
        const name = `${ask.keyId}:${ask.window}`;
        const taken = this.totals.get(name) ?? 0;
        const left = ask.limit - taken - ask.owed;
        const granted = ask.want > 0 && left > 0 && left >= ask.min ? Math.min(ask.want, left, Math.max(ask.min, Math.floor(left / 4))) : 0;
        this.totals.set(name, taken + ask.owed + granted);
        this.granted.push(granted);
        resolve({ granted, taken: taken + ask.owed + granted });
      });
    });
  }

  async giveBack(keyId: string, window: number, count: number): Promise<void> {
    this.givenBack.push(count);
    const name = `${keyId}:${window}`;
    this.totals.set(name, Math.max(0, (this.totals.get(name) ?? 0) - count));
  }

  /** Answers every step sent so far, and the steps those answers send, until none is left. */
  async answerAll(): Promise<void> {
    while (this.#waiting.length > 0) {
      for (const done of this.#waiting.splice(0)) done();
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  async close(): Promise<void> {}
}

const summary = (d: RateDecision) => [d.admitted, d.remaining, d.resetSeconds];

test('alone: the limit+1-th request of a window is the first refused; remaining counts down; the next window starts afresh', async (t) => {
  const start = windowStart('key_a', 1000);
  const clock = clockAt(start);
  const rl = new RateLimiter(3, undefined, clock.now);
  t.after(() => rl.close());
  const seen = [1, 2, 3, 4, 5].map((i) => {
    clock.set(start + i * 1000);
    return summary(rl.takeNow('key_a')!);
  });
  assert.deepEqual(seen, [
    [true, 2, 59],
    [true, 1, 58],
    [true, 0, 57],
    [false, 0, 56],
    [false, 0, 55],
  ]);
  assert.equal(rl.policyHeader, '"default";q=3;w=60');
  clock.set(start + 59_999);
  assert.equal(rl.rateLimitHeader(rl.takeNow('key_a')!), '"default";r=0;t=1');
  clock.set(start + WINDOW_MS);
  assert.deepEqual(summary(await rl.take('key_a')), [true, 2, 60]);
  assert.equal(rl.takeNow('key_b')!.admitted, true, 'each key has its own count');
});

test('windows are spread over the minute by key id, the same on every instance', () => {
  const offsets = new Set(['key_1', 'key_2', 'key_3', 'key_4'].map(windowOffset));
  assert.equal(offsets.size, 4);
  for (const o of offsets) assert.ok(o >= 0 && o < WINDOW_MS);
  assert.equal(windowOffset('key_1'), windowOffset('key_1'));
});

test('take(count) counts several requests at once, all or none: a batch that does not fit takes nothing (decisions 5.12)', () => {
  const limiter = new RateLimiter(5, undefined, () => windowStart('key_b', 10));
  assert.equal(limiter.takeNow('key_b')!.remaining, 4);
  assert.deepEqual(summary(limiter.takeNow('key_b', 3)!).slice(0, 2), [true, 1]);
  assert.deepEqual(summary(limiter.takeNow('key_b', 2)!).slice(0, 2), [false, 1], 'refused, what is left stays as it was');
  assert.equal(limiter.takeNow('key_b', 1)!.admitted, true, 'the refusal took nothing');
  assert.equal(limiter.takeNow('key_b')!.admitted, false);
});

test('shared: no request is admitted without a grant; the waiters of a key share one step; what is granted shrinks as the window fills', async (t) => {
  const redis = new HeldShared();
  const clock = clockAt(windowStart('key_s', 5000) + 1000);
  const a = new RateLimiter(60, redis, clock.now);
  const b = new RateLimiter(60, redis, clock.now);
  t.after(async () => {
    await a.close();
    await b.close();
  });
  assert.equal(a.takeNow('key_s'), undefined, 'nothing held here: only Redis can tell');
  const pending = [...Array<number>(65)].flatMap(() => [a.take('key_s'), b.take('key_s')]);
  assert.deepEqual(
    redis.asks.map((ask) => [ask.min, ask.want]),
    [
      [1, 1],
      [1, 1],
    ],
    'one step at a time per process: the first waiter sent it, the others wait for its answer',
  );
  await redis.answerAll();
  const decisions = await Promise.all(pending);
  assert.equal(decisions.filter((d) => d.admitted).length, 60, 'exactly the limit across both');
  assert.equal(redis.totals.get('key_s:5000'), 60);
  // After the first step of each, a quarter of what is left at most, then single requests near the limit.
  assert.deepEqual(redis.granted.slice(0, 4), [1, 1, 14, 11]);
  assert.deepEqual(redis.granted.filter((g) => g > 0).slice(-4), [1, 1, 1, 1], `grants: ${redis.granted.join(',')}`);
  for (const d of decisions.filter((x) => !x.admitted)) assert.equal(d.remaining, 0);
  assert.equal(b.takeNow('key_s')!.admitted, false, 'a spent window is refused from memory for a moment');
});

test('unused allowance goes back after it idles, and another process takes it', async (t) => {
  const redis = new HeldShared();
  const start = windowStart('key_i', 6000);
  const clock = clockAt(start + 1000);
  const a = new RateLimiter(60, redis, clock.now);
  const b = new RateLimiter(60, redis, clock.now);
  t.after(async () => {
    await a.close();
    await b.close();
  });
  // A burst on a: its next step asks ahead of demand, and the burst ends before that is used.
  const burst = [...Array<number>(10)].map(() => a.take('key_i'));
  await redis.answerAll();
  assert.ok((await Promise.all(burst)).every((d) => d.admitted));
  a.takeNow('key_i');
  await redis.answerAll();
  const held = redis.totals.get('key_i:6000')! - 11;
  assert.ok(held > 0, 'a holds an allowance it did not use');
  assert.equal(a.takeNow('key_i')!.remaining, 60 - 12, 'alone on the key, its remaining is exact');

  a.sweep();
  assert.deepEqual(redis.givenBack, [], 'not idle yet');
  clock.set(start + 1000 + IDLE_RETURN_MS);
  a.sweep();
  assert.deepEqual(redis.givenBack, [held - 1]);
  assert.equal(redis.totals.get('key_i:6000'), 12, 'the total is what was admitted');
  const rest = [...Array<number>(50)].map(() => b.take('key_i'));
  await redis.answerAll();
  assert.equal((await Promise.all(rest)).filter((d) => d.admitted).length, 48, 'b gets all that a gave back');
});

test('a batch takes its count all or none, the allowance held counting towards it', async (t) => {
  const redis = new HeldShared();
  const clock = clockAt(windowStart('key_c', 7000) + 10);
  const rl = new RateLimiter(10, redis, clock.now);
  t.after(() => rl.close());
  const first = rl.take('key_c', 7);
  await redis.answerAll();
  assert.deepEqual(summary(await first).slice(0, 2), [true, 3]);
  const tooMany = rl.take('key_c', 4);
  await redis.answerAll();
  assert.deepEqual(summary(await tooMany).slice(0, 2), [false, 3], 'refused, nothing taken');
  const fits = rl.take('key_c', 3);
  await redis.answerAll();
  assert.deepEqual(summary(await fits).slice(0, 2), [true, 0]);
  assert.equal(redis.totals.get('key_c:7000'), 10);
});

test('Redis away: each process decides alone (fail open), and adds what it admitted once Redis answers again', async (t) => {
  const redis = new HeldShared();
  const clock = clockAt(windowStart('key_d', 8000) + 10);
  const rl = new RateLimiter(100, redis, clock.now);
  t.after(() => rl.close());
  redis.connected = false;
  for (let i = 0; i < 5; i++) assert.equal(rl.takeNow('key_d')!.admitted, true, 'decided from memory, nothing sent');
  assert.equal(redis.asks.length, 0);
  redis.connected = true;
  rl.sweep();
  await redis.answerAll();
  assert.deepEqual(
    redis.asks.map((ask) => ask.owed),
    [5],
  );
  assert.equal(rl.takeNow('key_d')!.remaining, 100 - 6, 'the counts admitted alone are in the total, with an allowance taken ahead');
});

test('a step that fails: its waiters are decided alone at once, and the owed counts are sent again', async (t) => {
  const redis = new HeldShared();
  const clock = clockAt(windowStart('key_f', 9000) + 10);
  const rl = new RateLimiter(3, redis, clock.now);
  t.after(() => rl.close());
  const waiting = [rl.take('key_f'), rl.take('key_f')];
  redis.down = true;
  await redis.answerAll();
  assert.deepEqual((await Promise.all(waiting)).map(summary), [
    [true, 2, 60],
    [true, 1, 60],
  ]);
  assert.equal(rl.takeNow('key_f')!.admitted, true, 'still alone: the failure is remembered');
  assert.equal(rl.takeNow('key_f')!.admitted, false, 'the limit applies alone too');
  redis.down = false;
  rl.sweep();
  await redis.answerAll();
  assert.equal(redis.totals.get('key_f:9000'), 3);
});

test('an answer about a window that rolled over is dropped: its waiters ask again in the new window', async (t) => {
  const redis = new HeldShared();
  const start = windowStart('key_r', 3000);
  const clock = clockAt(start + 59_900);
  const rl = new RateLimiter(100, redis, clock.now);
  t.after(() => rl.close());
  const late = rl.take('key_r');
  clock.set(start + WINDOW_MS + 10);
  assert.equal(rl.takeNow('key_r'), undefined);
  await redis.answerAll();
  const d = await late;
  assert.deepEqual(summary(d), [true, 99, 60]);
  assert.deepEqual(
    redis.asks.map((ask) => ask.window),
    [3000, 3001],
  );
});
