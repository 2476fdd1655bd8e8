import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { SseParser, type SseMessage } from '../src/sse.js';

/** The client's reader of text/event-stream: what the stream says, whatever the chunks it arrives in. */

const STREAM =
  'retry: 1000\n\n' +
  ': keep-alive\n\n' +
  'id: 7\nevent: inventory.updated\ndata: {"seq":7}\n\n' +
  'event: reset\ndata: {"head":40}\n\n' +
  'data: first line\r\ndata:second line\r\n\r\n' +
  'id: 41\revent: inventory.created\rdata: {"seq":41}\r\r' +
  'id\ndata\n\n' +
  'event: ignored without data\n\n';

const MESSAGES: SseMessage[] = [
  { event: 'inventory.updated', data: '{"seq":7}', lastEventId: '7' },
  { event: 'reset', data: '{"head":40}', lastEventId: '7' },
  { event: 'message', data: 'first line\nsecond line', lastEventId: '7' },
  { event: 'inventory.created', data: '{"seq":41}', lastEventId: '41' },
  { event: 'message', data: '', lastEventId: '' },
];

test('a stream in one chunk: events, comments skipped, a retry with no data dispatches nothing, LF, CRLF and CR line ends', () => {
  assert.deepEqual(new SseParser().push(STREAM), MESSAGES);
});

test('the same messages however the stream is cut into chunks, a CRLF split between two included', () => {
  fc.assert(
    fc.property(fc.uniqueArray(fc.integer({ min: 1, max: STREAM.length - 1 }), { maxLength: 12 }), (cuts) => {
      const points = [0, ...cuts.sort((a, b) => a - b), STREAM.length];
      const parser = new SseParser();
      const got = points.slice(1).flatMap((end, i) => parser.push(STREAM.slice(points[i], end)));
      assert.deepEqual(got, MESSAGES);
    }),
  );
  const parser = new SseParser();
  assert.deepEqual([...parser.push('data: a\r'), ...parser.push('\n\r'), ...parser.push('\n')], [{ event: 'message', data: 'a', lastEventId: '' }]);
});

test('a message is dispatched only at its blank line', () => {
  const parser = new SseParser();
  assert.deepEqual(parser.push('id: 3\nevent: inventory.deleted\ndata: {"seq":3}\n'), []);
  assert.deepEqual(parser.push('\n'), [{ event: 'inventory.deleted', data: '{"seq":3}', lastEventId: '3' }]);
});
