import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FreshRead } from '../../src/cache/fresh-read.js';
import { StoreTimeoutError } from '../../src/store/deadline.js';
import { IN_TIME_MS } from '../support/process.js';

/** A read whose every call waits until the test settles it. */
function controlledRead() {
  const calls: { resolve: (v: number) => void; reject: (e: Error) => void }[] = [];
  const read = () => new Promise<number>((resolve, reject) => calls.push({ resolve, reject }));
  return { calls, read };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('FreshRead: one read shared, never one that began before the caller asked', () => {
  test('callers arriving during a read share the next one', async () => {
    const { calls, read } = controlledRead();
    const fresh = new FreshRead(read);
    const a = fresh.get();
    const b = fresh.get();
    const c = fresh.get();
    assert.equal(calls.length, 1, 'b and c do not start reads of their own');
    calls[0]!.resolve(1);
    assert.equal(await a, 1);
    await tick();
    assert.equal(calls.length, 2, 'the next read starts when the first ends');
    calls[1]!.resolve(2);
    assert.deepEqual(await Promise.all([b, c]), [2, 2], 'b and c see the read that began after them');
  });

  test('a failed read fails only its own callers; the next read still runs', async () => {
    const { calls, read } = controlledRead();
    const fresh = new FreshRead(read);
    const a = fresh.get();
    const b = fresh.get();
    calls[0]!.reject(new Error('down'));
    await assert.rejects(a, /down/);
    await tick();
    calls[1]!.resolve(7);
    assert.equal(await b, 7);
  });

  test('gather: callers of one turn of the event loop share a read that starts after that turn', async () => {
    const { calls, read } = controlledRead();
    const fresh = new FreshRead(read, { gather: true });
    const a = fresh.get();
    const b = fresh.get();
    assert.equal(calls.length, 0, 'no read yet: the turn may bring more callers');
    await tick();
    assert.equal(calls.length, 1);
    calls[0]!.resolve(3);
    assert.deepEqual(await Promise.all([a, b]), [3, 3]);
    const c = fresh.get();
    await tick();
    assert.equal(calls.length, 2, 'a later turn gets a read of its own');
    calls[1]!.resolve(4);
    assert.equal(await c, 4);
  });

  test('with nothing in flight a caller starts a read at once', async () => {
    const { calls, read } = controlledRead();
    const fresh = new FreshRead(read);
    const a = fresh.get();
    calls[0]!.resolve(1);
    await a;
    await tick();
    const b = fresh.get();
    assert.equal(calls.length, 2);
    calls[1]!.resolve(2);
    assert.equal(await b, 2);
  });

  test('timeoutMs: a caller behind a stuck read is answered within the timeout from its call, and no read is started for it afterwards', async () => {
    const { calls, read } = controlledRead();
    const fresh = new FreshRead(read, { timeoutMs: 30 });
    void fresh.get().catch(() => {}); // the read in flight, which the store bounds itself
    const behind = fresh.get();
    await assert.rejects(behind, StoreTimeoutError, 'not the stuck read plus a read of its own');
    calls[0]!.resolve(1);
    await tick();
    assert.equal(calls.length, 1, 'nobody waits for the abandoned read any more');
    const later = fresh.get();
    assert.equal(calls.length, 2, 'a later caller starts its own read');
    calls[1]!.resolve(2);
    assert.equal(await later, 2);
  });

  test('timeoutMs: a caller behind a read that ends in time gets the next read as usual', async () => {
    const { calls, read } = controlledRead();
    const fresh = new FreshRead(read, { timeoutMs: 60_000 });
    const a = fresh.get();
    const b = fresh.get();
    calls[0]!.resolve(1);
    assert.equal(await a, 1);
    await tick();
    calls[1]!.resolve(2);
    assert.equal(await b, 2);
  });

  test('timeoutMs: callers arriving after an abandoned wait queue behind the stuck read again, never a second read beside it', async () => {
    const { calls, read } = controlledRead();
    // The caller queued again must be answered in time (a turn of the loop lies between).
    const fresh = new FreshRead(read, { timeoutMs: IN_TIME_MS });
    void fresh.get().catch(() => {});
    await assert.rejects(fresh.get(), StoreTimeoutError);
    const again = fresh.get();
    assert.equal(calls.length, 1, 'one read in flight at most');
    calls[0]!.resolve(1);
    await tick();
    assert.equal(calls.length, 2);
    calls[1]!.resolve(2);
    assert.equal(await again, 2);
  });
});
