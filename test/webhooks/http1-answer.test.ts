import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AnswerReader, MalformedAnswerError, MAX_HEAD_BYTES } from '../../src/webhooks/http1-answer.js';

interface Read {
  status: number;
  body: string;
  complete: boolean;
  reusable: boolean;
  trailing: boolean;
  retryAfter: string | undefined;
  keepAliveSeconds: number | undefined;
}

/** Feeds `answer` in pieces of `size` bytes (all at once when undefined), then the connection's end if `closed`. */
function read(answer: string | Buffer, size?: number, closed = false): Read {
  const bytes = typeof answer === 'string' ? Buffer.from(answer, 'latin1') : answer;
  const body: Buffer[] = [];
  const reader = new AnswerReader((piece) => body.push(Buffer.from(piece)));
  const step = size ?? Math.max(1, bytes.length);
  for (let at = 0; at < bytes.length; at += step) reader.feed(bytes.subarray(at, at + step));
  if (closed) reader.end();
  return {
    status: reader.status,
    body: Buffer.concat(body).toString('latin1'),
    complete: reader.complete,
    reusable: reader.reusable,
    trailing: reader.trailing,
    retryAfter: reader.retryAfter,
    keepAliveSeconds: reader.keepAliveSeconds,
  };
}

/** Reads `answer` whole and in every split into pieces of 1 to 7 bytes: each must come to the same. */
function readEverySplit(answer: string, closed = false): Read {
  const whole = read(answer, undefined, closed);
  for (let size = 1; size <= 7; size++) assert.deepEqual(read(answer, size, closed), whole, `in pieces of ${size}`);
  return whole;
}

function rejects(answer: string, code: string): void {
  for (const size of [undefined, 1, 3]) {
    assert.throws(
      () => read(answer, size),
      (error: unknown) => error instanceof MalformedAnswerError && error.code === code,
      `${JSON.stringify(answer.slice(0, 60))} in pieces of ${size ?? 'all'}`,
    );
  }
}

test('a content-length body, however the bytes are split; the connection stays reusable', () => {
  const got = readEverySplit('HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello');
  assert.deepEqual(got, { status: 200, body: 'hello', complete: true, reusable: true, trailing: false, retryAfter: undefined, keepAliveSeconds: undefined });
});

test('header names are case-insensitive and values trimmed of spaces and tabs', () => {
  const got = readEverySplit('HTTP/1.1 503 Busy\r\nCONTENT-LENGTH: \t2 \t\r\nReTrY-AfTeR:  30 \r\n\r\nno');
  assert.equal(got.body, 'no');
  assert.equal(got.retryAfter, '30');
});

test('only the first Retry-After counts, as node:http kept it', () => {
  assert.equal(read('HTTP/1.1 429 X\r\nretry-after: 1\r\nretry-after: 2\r\ncontent-length: 0\r\n\r\n').retryAfter, '1');
});

test('a status line without a reason phrase, and status codes outside 1xx-5xx are read', () => {
  assert.equal(read('HTTP/1.1 200\r\ncontent-length: 0\r\n\r\n').status, 200);
  assert.equal(read('HTTP/1.1 600 Odd\r\ncontent-length: 0\r\n\r\n').status, 600);
  assert.equal(read('HTTP/1.1 000 Zero\r\ncontent-length: 0\r\n\r\n').complete, true);
});

test('empty lines before the status line are skipped, as llhttp does', () => {
  assert.equal(read('\r\n\r\nHTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n').complete, true);
});

test('1xx interim answers are skipped, their headers forgotten; 101 is refused', () => {
  const got = readEverySplit('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: </a>\r\nconnection: close\r\n\r\nHTTP/1.1 201 Created\r\ncontent-length: 1\r\n\r\n!');
  assert.equal(got.status, 201);
  assert.equal(got.body, '!');
  assert.equal(got.reusable, true);
  rejects('HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\n\r\n', 'HPE_INVALID_STATUS');
});

test('204 and 304 have no body, whatever their content-length says', () => {
  for (const status of [204, 304]) {
    const got = read(`HTTP/1.1 ${status} X\r\ncontent-length: 5\r\n\r\n`);
    assert.equal(got.complete, true);
    assert.equal(got.body, '');
    assert.equal(got.reusable, true);
  }
});

test('chunked: extensions skipped, sizes in either case, trailers read and left out of the body', () => {
  const answer = 'HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n5;name=value;quoted="a b"\r\nhello\r\nA\r\n, chunked!\r\n0;last\r\nx-trailer: 1\r\nx-other: two\r\n\r\n';
  const got = readEverySplit(answer);
  assert.equal(got.body, 'hello, chunked!');
  assert.equal(got.complete, true);
  assert.equal(got.reusable, true);
});

test('chunked is the last transfer coding or not at all: otherwise the body runs to the close', () => {
  assert.equal(read('HTTP/1.1 200 OK\r\ntransfer-encoding: gzip, chunked\r\n\r\n3\r\nraw\r\n0\r\n\r\n').body, 'raw');
  assert.equal(read('HTTP/1.1 200 OK\r\ntransfer-encoding: gzip\r\ntransfer-encoding: chunked\r\n\r\n3\r\nraw\r\n0\r\n\r\n').body, 'raw');
  const open = read('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked, gzip\r\n\r\nraw bytes');
  assert.equal(open.complete, false);
  assert.equal(open.reusable, false);
  const closed = read('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked, gzip\r\n\r\nraw bytes', 2, true);
  assert.equal(closed.complete, true);
  assert.equal(closed.body, 'raw bytes');
});

test('no framing: the body is read to the close, and the connection is not reused', () => {
  const got = readEverySplit('HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\nall of it', true);
  assert.equal(got.body, 'all of it');
  assert.equal(got.complete, true);
  assert.equal(got.reusable, false);
});

test('a close cuts a framed body short: not complete', () => {
  assert.equal(read('HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc', undefined, true).complete, false);
  assert.equal(read('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nab', undefined, true).complete, false);
});

test('connection: close, and HTTP/1.0 without keep-alive, end the connection', () => {
  assert.equal(read('HTTP/1.1 200 OK\r\nConnection: Keep-Alive, CLOSE\r\ncontent-length: 0\r\n\r\n').reusable, false);
  assert.equal(read('HTTP/1.0 200 OK\r\ncontent-length: 0\r\n\r\n').reusable, false);
  assert.equal(read('HTTP/1.0 200 OK\r\nconnection: keep-alive\r\ncontent-length: 0\r\n\r\n').reusable, true);
  assert.equal(read('HTTP/0.9 200 OK\r\ncontent-length: 0\r\n\r\n').reusable, false);
});

test('the Keep-Alive timeout hint is read', () => {
  assert.equal(read('HTTP/1.1 200 OK\r\nkeep-alive: timeout=5, max=100\r\ncontent-length: 0\r\n\r\n').keepAliveSeconds, 5);
  assert.equal(read('HTTP/1.1 200 OK\r\nkeep-alive: max=100\r\ncontent-length: 0\r\n\r\n').keepAliveSeconds, undefined);
});

test('bytes after a complete answer are noticed, not read as a body', () => {
  const got = read('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n');
  assert.equal(got.body, 'ok');
  assert.equal(got.trailing, true);
});

test('a body split mid-chunk-framing is put together from byte-sized pieces', () => {
  const payload = Buffer.alloc(300, 'z').toString('latin1');
  const got = readEverySplit(`HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n12c\r\n${payload}\r\n0\r\n\r\n`);
  assert.equal(got.body, payload);
});

test('malformed status lines', () => {
  rejects('garbage\r\n\r\n', 'HPE_INVALID_CONSTANT');
  rejects('http/1.1 200 OK\r\n\r\n', 'HPE_INVALID_CONSTANT');
  rejects('HTTP/2 200\r\n\r\n', 'HPE_INVALID_VERSION');
  rejects('HTTP/1.2 200 OK\r\n\r\n', 'HPE_INVALID_VERSION');
  rejects('HTTP/1.1 20 OK\r\n\r\n', 'HPE_INVALID_STATUS');
  rejects('HTTP/1.1 2000 OK\r\n\r\n', 'HPE_INVALID_STATUS');
  rejects('HTTP/1.1  200 OK\r\n\r\n', 'HPE_INVALID_STATUS');
  rejects('HTTP/1.1 200\tOK\r\n\r\n', 'HPE_INVALID_STATUS');
  rejects('HTTP/1.1 200 OK\ncontent-length: 0\n\n', 'HPE_CR_EXPECTED');
});

test('malformed headers', () => {
  rejects('HTTP/1.1 200 OK\r\ncontent-length: 0\n\r\n', 'HPE_CR_EXPECTED');
  rejects('HTTP/1.1 200 OK\r\nx-a: 1\r\n  folded\r\ncontent-length: 0\r\n\r\n', 'HPE_INVALID_HEADER_TOKEN');
  rejects('HTTP/1.1 200 OK\r\ncontent-length : 0\r\n\r\n', 'HPE_INVALID_HEADER_TOKEN');
  rejects('HTTP/1.1 200 OK\r\nx(a): 1\r\n\r\n', 'HPE_INVALID_HEADER_TOKEN');
  rejects('HTTP/1.1 200 OK\r\n: 1\r\n\r\n', 'HPE_INVALID_HEADER_TOKEN');
  rejects('HTTP/1.1 200 OK\r\nno colon\r\n\r\n', 'HPE_INVALID_HEADER_TOKEN');
  rejects('HTTP/1.1 200 OK\r\nx-a: a\x01b\r\n\r\n', 'HPE_INVALID_HEADER_TOKEN');
  rejects('HTTP/1.1 200 OK\r\nx-a: a\x00b\r\n\r\n', 'HPE_INVALID_HEADER_TOKEN');
  rejects('HTTP/1.1 200 OK\r\nx-a: a\rb\r\n\r\n', 'HPE_LF_EXPECTED');
  // obs-text is allowed in a value, as node:http allows it.
  assert.equal(read('HTTP/1.1 200 OK\r\nx-a: caf\xe9\r\ncontent-length: 0\r\n\r\n').complete, true);
});

test('malformed framing', () => {
  rejects('HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-length: 2\r\n\r\nok', 'HPE_UNEXPECTED_CONTENT_LENGTH');
  rejects('HTTP/1.1 200 OK\r\ncontent-length: 2, 2\r\n\r\nok', 'HPE_INVALID_CONTENT_LENGTH');
  rejects('HTTP/1.1 200 OK\r\ncontent-length: +2\r\n\r\nok', 'HPE_INVALID_CONTENT_LENGTH');
  rejects('HTTP/1.1 200 OK\r\ncontent-length: 99999999999999999999\r\n\r\nok', 'HPE_INVALID_CONTENT_LENGTH');
  rejects('HTTP/1.1 200 OK\r\ncontent-length: 2\r\ntransfer-encoding: chunked\r\n\r\n', 'HPE_INVALID_TRANSFER_ENCODING');
  rejects('HTTP/1.1 200 OK\r\ntransfer-encoding: identity\r\ncontent-length: 2\r\n\r\n', 'HPE_INVALID_CONTENT_LENGTH');
  rejects('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n', 'HPE_INVALID_CHUNK_SIZE');
  rejects('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n\r\n', 'HPE_INVALID_CHUNK_SIZE');
  rejects('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2 \r\nok\r\n', 'HPE_INVALID_CHUNK_SIZE');
  rejects('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nfffffffffffffffffff\r\n', 'HPE_INVALID_CHUNK_SIZE');
  rejects('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\nok\r\n', 'HPE_CR_EXPECTED');
  rejects('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nokXX0\r\n\r\n', 'HPE_STRICT');
  rejects('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2;a\x01\r\nok\r\n', 'HPE_STRICT');
  rejects('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n0\r\nx t\r\n\r\n', 'HPE_INVALID_HEADER_TOKEN');
});

test('a head past 16 KiB is refused as soon as it is past, ended or not; just under is read', () => {
  rejects(`HTTP/1.1 200 OK\r\nx-big: ${'a'.repeat(MAX_HEAD_BYTES)}\r\n\r\n`, 'HPE_HEADER_OVERFLOW');
  // A head that never ends is not buffered past the limit.
  rejects(`HTTP/1.1 200 OK\r\nx-big: ${'a'.repeat(MAX_HEAD_BYTES + 10)}`, 'HPE_HEADER_OVERFLOW');
  rejects(`HTTP/1.1 200 OK\r\n${'x-many: 1\r\n'.repeat(MAX_HEAD_BYTES / 10)}\r\n`, 'HPE_HEADER_OVERFLOW');
  assert.equal(read(`HTTP/1.1 200 OK\r\nx-big: ${'a'.repeat(MAX_HEAD_BYTES - 100)}\r\ncontent-length: 0\r\n\r\n`).complete, true);
});

test('trailers and chunk extensions are bounded too', () => {
  rejects(`HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n0\r\nx-t: ${'a'.repeat(MAX_HEAD_BYTES)}\r\n\r\n`, 'HPE_HEADER_OVERFLOW');
  rejects(`HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1;${'e'.repeat(MAX_HEAD_BYTES + 1)}\r\n`, 'HPE_HEADER_OVERFLOW');
});

test('started says whether any byte came', () => {
  const reader = new AnswerReader(() => undefined);
  assert.equal(reader.started, false);
  reader.feed(Buffer.from('H'));
  assert.equal(reader.started, true);
  assert.equal(reader.headRead, false);
  assert.equal(reader.end(), false);
});
