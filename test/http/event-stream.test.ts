import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { test } from 'node:test';
import { EVENT_PAGE, EventHub } from '../../src/cache/event-hub.js';
import { EventStream } from '../../src/http/event-stream.js';
import { MemoryEvents } from '../support/memory-events.js';
import { until } from '../support/process.js';

/**
 * A response whose client reads nothing: every byte written stays buffered (writableLength), as
 * on a socket whose peer stopped reading once the kernel's buffers are full.
 */
class StalledResponse extends EventEmitter {
  written = '';
  writableLength = 0;
  writableNeedDrain = false;
  shouldKeepAlive = true;
  ended = false;
  destroyed = false;
  status = 0;

  writeHead(status: number): this {
    this.status = status;
    return this;
  }

  write(text: string): boolean {
    this.written += text;
    this.writableLength += Buffer.byteLength(text);
    this.writableNeedDrain = this.writableLength > 16 * 1024;
    return !this.writableNeedDrain;
  }

  /** The client reads everything waiting. */
  readAll(): void {
    this.writableLength = 0;
    if (this.writableNeedDrain) {
      this.writableNeedDrain = false;
      this.emit('drain');
    }
  }

  end(): this {
    this.ended = true;
    this.emit('close');
    return this;
  }

  destroy(): this {
    this.destroyed = true;
    this.emit('close');
    return this;
  }
}

function open(log: MemoryEvents, hub: EventHub, start: number, options: { maxBufferedBytes?: number } = {}) {
  const res = new StalledResponse();
  const stream = new EventStream(res as unknown as ServerResponse, ['content-type', 'text/event-stream'], start, { hub, events: log }, options);
  void stream.follow();
  return { res, stream };
}

test('a live reader that lets more than the bound pile up is cut off, and the hub lets it go', async (t) => {
  const log = new MemoryEvents();
  const hub = new EventHub(log, { pollMs: 60_000 });
  t.after(() => hub.close());
  const { res, stream } = open(log, hub, await log.head(), { maxBufferedBytes: 4096 });
  await until(() => hub.size === 1, 'the stream joining the hub');
  for (let i = 0; i < 5; i++) log.append(1n, i);
  await until(() => stream.position === 5, 'five events written');
  assert.equal(res.destroyed, false, 'under the bound: kept');
  for (let i = 0; i < 40; i++) log.append(2n, i);
  await until(() => res.destroyed, 'the cut');
  assert.equal(res.ended, false, 'cut, not ended: what waits is dropped');
  assert.equal(hub.size, 0);
  assert.equal(stream.open, false);
});

test('a replay waits for its client to read each page before it reads the next', async (t) => {
  const log = new MemoryEvents();
  for (let i = 0; i < EVENT_PAGE * 2 + 10; i++) log.append(1n, i, { hint: false });
  const hub = new EventHub(log, { pollMs: 60_000 });
  t.after(() => hub.close());
  const { res, stream } = open(log, hub, 0);
  await until(() => stream.position === EVENT_PAGE, 'the first page');
  await new Promise((wake) => setTimeout(wake, 50));
  assert.equal(stream.position, EVENT_PAGE, 'no second page while the first waits');
  res.readAll();
  await until(() => stream.position === EVENT_PAGE * 2, 'the second page');
  res.readAll();
  await until(() => hub.size === 1, 'caught up and live');
  assert.equal(stream.position, EVENT_PAGE * 2 + 10);
  const ids = [...res.written.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
  assert.deepEqual(ids, Array.from({ length: EVENT_PAGE * 2 + 10 }, (_, i) => i + 1));
  assert.match(res.written, /^retry: \d+\n\n/);
  assert.equal(res.shouldKeepAlive, false, 'a stream closes its connection when it ends');
});

test('a stream that joins while the hub is ahead reads again until it has caught up: nothing fanned out before is missed', async (t) => {
  const log = new MemoryEvents();
  const hub = new EventHub(log, { pollMs: 60_000 });
  t.after(() => hub.close());
  const early = open(log, hub, 0);
  await until(() => hub.size === 1, 'a first stream live');
  // The hub moves on while a second stream's replay is on its way to it.
  const late = open(log, hub, 0);
  for (let i = 0; i < 20; i++) log.append(BigInt(i), i);
  await until(() => early.stream.position === 20 && late.stream.position === 20 && hub.size === 2, 'both streams live at seq 20');
  for (const { res } of [early, late]) {
    assert.deepEqual([...res.written.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1])), Array.from({ length: 20 }, (_, i) => i + 1));
  }
});

test('a heartbeat comment at each interval; end() ends the response cleanly and leaves the hub', async (t) => {
  const log = new MemoryEvents();
  const hub = new EventHub(log, { pollMs: 60_000 });
  t.after(() => hub.close());
  const res = new StalledResponse();
  const stream = new EventStream(res as unknown as ServerResponse, [], 0, { hub, events: log }, { heartbeatMs: 5 });
  void stream.follow();
  await until(() => (res.written.match(/^: keep-alive$/gm) ?? []).length >= 3, 'three heartbeats');
  await until(() => hub.size === 1, 'live');
  stream.end();
  assert.equal(res.ended, true);
  assert.equal(hub.size, 0);
  const written = res.written.length;
  await new Promise((wake) => setTimeout(wake, 30));
  assert.equal(res.written.length, written, 'nothing after the end');
});
