import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { StoreUnavailableError } from '../../src/errors.js';
import { StoreTimeoutError } from '../../src/store/deadline.js';
import { batchChannel, GroupCommit, serialCommit, type CommitBatch } from '../../src/store/group-commit.js';
import { IN_TIME_MS } from '../support/process.js';

/** A change for these tests: a key (a pet, say) and a value; the value 'bad' is refused by the store. */
interface Change {
  key: string;
  value: string;
}

/** A store's batch commit that records each batch and settles it when the test says so. */
function scriptedCommit() {
  const batches: string[][] = [];
  const release: (() => void)[] = [];
  let mode: 'ok' | 'refuse bad batches' | 'unavailable' = 'ok';
  const commit: CommitBatch<Change, string> = async (batch) => {
    batches.push(batch.map((c) => `${c.key}=${c.value}`));
    await new Promise<void>((resolve) => release.push(resolve));
    if (mode === 'unavailable') throw new StoreUnavailableError('down');
    if (mode === 'refuse bad batches' && batch.some((c) => c.value === 'bad')) throw new Error('CHECK constraint failed');
    return batch.map((c) => (c.value === 'fails alone' ? new Error(`refused ${c.key}`) : `${c.key}:${c.value}`));
  };
  return {
    commit,
    batches,
    setMode: (m: typeof mode) => (mode = m),
    /** Lets every commit under way finish, then waits until the queue has moved on. */
    async settle() {
      while (release.length > 0) {
        release.shift()!();
        await new Promise((r) => setImmediate(r));
      }
    },
  };
}

const options = { keysOf: (c: Change) => [c.key], maxBatch: 3, maxWaiting: 5 };
const turn = () => new Promise((r) => setImmediate(r));

describe('GroupCommit: the one write path of the stores', () => {
  it('commits the changes of one turn of the event loop together; those arriving meanwhile form the next batch', async () => {
    const store = scriptedCommit();
    const group = new GroupCommit(store.commit, options);
    const first = [group.submit({ key: 'a', value: '1' }), group.submit({ key: 'b', value: '1' })];
    assert.deepEqual(store.batches, [], 'the first change waits one turn for the ones parsed with it');
    await turn();
    assert.deepEqual(store.batches, [['a=1', 'b=1']]);
    const second = [group.submit({ key: 'c', value: '1' }), group.submit({ key: 'd', value: '1' })];
    await turn();
    assert.deepEqual(store.batches, [['a=1', 'b=1']], 'one batch in flight at a time');
    await store.settle();
    assert.deepEqual(await Promise.all(first), ['a:1', 'b:1']);
    assert.deepEqual(store.batches, [['a=1', 'b=1'], ['c=1', 'd=1']]);
    await store.settle();
    assert.deepEqual(await Promise.all(second), ['c:1', 'd:1']);
  });

  it('changes sharing a key never share a batch and keep their order; a batch holds at most maxBatch changes', async () => {
    const store = scriptedCommit();
    const group = new GroupCommit(store.commit, options);
    const all = ['a=1', 'a=2', 'b=1', 'c=1', 'd=1'].map((s) => {
      const [key, value] = s.split('=') as [string, string];
      return group.submit({ key, value });
    });
    await turn();
    await store.settle();
    await store.settle();
    assert.deepEqual(store.batches, [['a=1', 'b=1', 'c=1'], ['a=2', 'd=1']]);
    assert.deepEqual(await Promise.all(all), ['a:1', 'a:2', 'b:1', 'c:1', 'd:1']);
  });

  it('a change left for the next batch holds all its keys: no later change sharing one passes it', async () => {
    const store = scriptedCommit();
    // Two keys per change, as a change of quantity has (its pet, and its idempotency key).
    const group = new GroupCommit(store.commit, { ...options, keysOf: (c: Change) => c.key.split('+') });
    const all = [group.submit({ key: 'a+k', value: '1' }), group.submit({ key: 'b+k', value: '1' }), group.submit({ key: 'b', value: '2' })];
    await turn();
    for (let i = 0; i < 3; i++) await store.settle();
    assert.deepEqual(store.batches, [['a+k=1'], ['b+k=1'], ['b=2']], 'b=2 waits behind b+k=1, which waits behind a+k=1');
    assert.deepEqual(await Promise.all(all), ['a+k:1', 'b+k:1', 'b:2']);
  });

  it('beyond maxWaiting a change is refused at once as unavailable', async () => {
    const store = scriptedCommit();
    const group = new GroupCommit(store.commit, options);
    const accepted = Array.from({ length: 5 }, (_, i) => group.submit({ key: `k${i}`, value: '1' }));
    await assert.rejects(group.submit({ key: 'k5', value: '1' }), (err) => err instanceof StoreUnavailableError && /more than 5 changes/.test(err.message));
    assert.equal(group.waiting, 5);
    await turn();
    assert.equal(group.waiting, 2, 'three went out in the first batch');
    await store.settle();
    await store.settle();
    assert.equal((await Promise.all(accepted)).length, 5);
  });

  it('a change the store refuses fails alone: per-change errors, and a refused batch retried change by change', async () => {
    const store = scriptedCommit();
    const group = new GroupCommit(store.commit, options);
    const results = await settleAll(store, [group.submit({ key: 'a', value: 'fails alone' }), group.submit({ key: 'b', value: '1' })]);
    assert.deepEqual(results, ['refused a', 'b:1']);

    store.setMode('refuse bad batches');
    store.batches.length = 0;
    const retried = await settleAll(store, [group.submit({ key: 'a', value: '2' }), group.submit({ key: 'b', value: 'bad' }), group.submit({ key: 'c', value: '2' })]);
    assert.deepEqual(retried, ['a:2', 'CHECK constraint failed', 'c:2']);
    assert.deepEqual(store.batches, [['a=2', 'b=bad', 'c=2'], ['a=2'], ['b=bad'], ['c=2']]);
  });

  it('when the store goes away while a refused batch is retried change by change, the rest fail at once', async () => {
    let commits = 0;
    const group = new GroupCommit<Change, string>(async (batch) => {
      commits++;
      if (batch.length > 1) throw new Error('CHECK constraint failed');
      if (batch[0]!.key === 'b') throw new StoreUnavailableError('down');
      return batch.map((c) => c.value);
    }, options);
    const results = await Promise.allSettled(['a', 'b', 'c'].map((key) => group.submit({ key, value: key })));
    assert.deepEqual(
      results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message)),
      ['a', 'down', 'down'],
    );
    assert.equal(commits, 3, 'the batch, then a and b alone; c is not tried against a store that is down');
  });

  it('a batch that fails because the store is unavailable fails every change in it, without retries', async () => {
    const store = scriptedCommit();
    const group = new GroupCommit(store.commit, options);
    store.setMode('unavailable');
    const results = await settleAll(store, [group.submit({ key: 'a', value: '1' }), group.submit({ key: 'b', value: '1' })]);
    assert.deepEqual(results, ['down', 'down']);
    assert.equal(store.batches.length, 1);
  });

  it('close commits every change already accepted, then refuses new ones as unavailable', async () => {
    const store = scriptedCommit();
    const group = new GroupCommit(store.commit, options);
    const accepted = ['a', 'a', 'b'].map((key, i) => group.submit({ key, value: String(i) }));
    const closed = group.close();
    await assert.rejects(group.submit({ key: 'c', value: '1' }), (err) => err instanceof StoreUnavailableError && /closed/.test(err.message));
    await store.settle();
    await store.settle();
    await closed;
    assert.deepEqual(await Promise.all(accepted), ['a:0', 'a:1', 'b:2']);
  });

  it('timeoutMs: a change waiting behind a stuck batch is answered within the timeout from its submit, and never committed', async () => {
    const store = scriptedCommit();
    // Long enough that a is sent before its deadline even when a loaded machine stalls the event loop: a stall past
    // it between the submit and the batch's start would answer a before it is sent, and send b in its place.
    const group = new GroupCommit(store.commit, { ...options, timeoutMs: 500 });
    const stuck = group.submit({ key: 'a', value: '1' });
    // Awaited from its submit: a stall past the timeout before the next lines must not leave its answer unhandled.
    const stuckAnswered = assert.rejects(stuck, StoreTimeoutError, 'the change in flight is answered in time too');
    await turn();
    assert.deepEqual(store.batches, [['a=1']], 'a is in flight, stuck');
    const waiting = group.submit({ key: 'b', value: '1' });
    await Promise.all([assert.rejects(waiting, StoreTimeoutError), stuckAnswered]);
    assert.equal(group.waiting, 0, 'the late change left the queue');
    await store.settle();
    await store.settle();
    assert.deepEqual(store.batches, [['a=1']], 'b, answered as unavailable, was never sent');
  });

  it('timeoutMs: a batch is given the deadline of its last change; one answered late may still commit', async () => {
    // The change sent in time below must be answered in time.
    const timeoutMs = IN_TIME_MS;
    const deadlines: (number | undefined)[] = [];
    const release: (() => void)[] = [];
    const group = new GroupCommit<Change, string>(async (batch, deadline) => {
      deadlines.push(deadline);
      await new Promise<void>((resolve) => release.push(resolve));
      return batch.map((c) => c.value);
    }, { ...options, timeoutMs });
    const before = performance.now();
    const late = group.submit({ key: 'a', value: '1' });
    const other = group.submit({ key: 'b', value: '2' });
    // Awaited from their submit, as above.
    const bothLate = Promise.all([assert.rejects(late, StoreTimeoutError), assert.rejects(other, StoreTimeoutError)]);
    await turn();
    assert.equal(deadlines.length, 1);
    assert.ok(deadlines[0]! >= before + timeoutMs && deadlines[0]! <= performance.now() + timeoutMs, 'the latest deadline of the batch');
    await bothLate;
    release.shift()!(); // the store commits after all: the answer stays the 503 already sent
    await turn();
    const inTime = group.submit({ key: 'a', value: '3' });
    await turn();
    release.shift()!();
    assert.equal(await inTime, '3');
  });

  it('timeoutMs: one timer for every change waiting, gone with the last answer, so an idle group commit keeps no process up', async () => {
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const store = scriptedCommit();
    const group = new GroupCommit(store.commit, { ...options, timeoutMs: 10_000 });
    const idle = timers();
    const first = [group.submit({ key: 'a', value: '1' }), group.submit({ key: 'b', value: '1' })];
    assert.equal(timers(), idle + 1);
    await turn();
    const queued = group.submit({ key: 'a', value: '2' });
    assert.equal(timers(), idle + 1, 'a change queued behind the batch in flight shares the timer');
    await store.settle();
    assert.deepEqual(await Promise.all([...first, queued]), ['a:1', 'b:1', 'a:2']);
    assert.equal(timers(), idle, 'every change answered: no timer left');
  });

  it('without timeoutMs a batch gets no deadline and a change waits as long as the store takes', async () => {
    const deadlines: (number | undefined)[] = [];
    const group = new GroupCommit<Change, string>(async (batch, deadline) => {
      deadlines.push(deadline);
      return batch.map((c) => c.value);
    }, options);
    assert.equal(await group.submit({ key: 'a', value: '1' }), '1');
    assert.deepEqual(deadlines, [undefined]);
  });
});

describe('serialCommit: writes that each need a transaction of their own', () => {
  it('one write at a time in arrival order, each failing alone, refused once closed; no batch size published', async () => {
    const sizes: unknown[] = [];
    const onSize = (size: unknown) => sizes.push(size);
    batchChannel.subscribe(onSize);
    try {
      const started: string[] = [];
      const release: (() => void)[] = [];
      const serial = serialCommit(async (write: string) => {
        started.push(write);
        await new Promise<void>((resolve) => release.push(resolve));
        if (write === 'bad') throw new Error('refused');
        return `${write}:done`;
      });
      const answers = Promise.allSettled([serial.submit('a'), serial.submit('bad'), serial.submit('c')]);
      await turn();
      assert.deepEqual(started, ['a'], 'one at a time');
      while (started.length < 3 || release.length > 0) {
        release.shift()?.();
        await turn();
      }
      assert.deepEqual(started, ['a', 'bad', 'c']);
      const settled = await answers;
      assert.deepEqual(settled.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message)), ['a:done', 'refused', 'c:done']);
      await serial.close();
      await assert.rejects(serial.submit('d'), StoreUnavailableError);
      assert.deepEqual(sizes, []);
    } finally {
      batchChannel.unsubscribe(onSize);
    }
  });
});

/** Lets the scripted store commit until every promise has settled; each as its value or its error's message. */
async function settleAll(store: ReturnType<typeof scriptedCommit>, promises: Promise<string>[]): Promise<string[]> {
  let done = false;
  const all = Promise.allSettled(promises).finally(() => (done = true));
  while (!done) {
    await turn();
    await store.settle();
  }
  return (await all).map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message));
}
