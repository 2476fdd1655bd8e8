import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ServerResponse } from 'node:http';
import { ANSWER_HEADERS_VARIABLE, answerHeaderLinesFromEnv, answerHeadersFromEnv, answerHeadersOf, JSON_TYPE, sendJson, sendOk } from '../../bench/answer-headers.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function withVariable<T>(value: string | undefined, run: () => T): T {
  const before = process.env[ANSWER_HEADERS_VARIABLE];
  if (value === undefined) delete process.env[ANSWER_HEADERS_VARIABLE];
  else process.env[ANSWER_HEADERS_VARIABLE] = value;
  try {
    return run();
  } finally {
    if (before === undefined) delete process.env[ANSWER_HEADERS_VARIABLE];
    else process.env[ANSWER_HEADERS_VARIABLE] = before;
  }
}

test('without the variable a baseline keeps its own two headers', () => {
  assert.equal(
    withVariable(undefined, () => answerHeadersFromEnv()),
    undefined,
  );
});

test("with it, every answer carries the service's headers, a new request id each, and its own type and length", () => {
  const given = { etag: '"v2"', 'x-request-id': 'from-the-service', 'content-type': 'text/plain', 'x-frame-options': 'DENY' };
  const headers = withVariable(JSON.stringify(given), () => answerHeadersFromEnv())!;
  const [first, second] = [headers('application/json; charset=utf-8', 45), headers('application/json; charset=utf-8', 7)];
  assert.deepEqual(first.slice(0, 4), ['etag', '"v2"', 'x-frame-options', 'DENY']);
  assert.equal(first[4], 'x-request-id');
  assert.match(String(first[5]), UUID);
  assert.notEqual(first[5], second[5], 'a new request id per answer');
  assert.deepEqual(first.slice(6), ['content-type', 'application/json; charset=utf-8', 'content-length', '45']);
  assert.deepEqual(second.slice(6), ['content-type', 'application/json; charset=utf-8', 'content-length', '7']);
  const fixedOnly = withVariable(JSON.stringify({ vary: 'Accept-Encoding' }), () => answerHeadersFromEnv())!;
  assert.deepEqual(fixedOnly('application/json', 2), ['vary', 'Accept-Encoding', 'content-type', 'application/json', 'content-length', '2']);
});

test('the same headers as lines for a baseline that frames its own answers: the fixed ones as given, a new request id each, then the type', () => {
  assert.equal(
    withVariable(undefined, () => answerHeaderLinesFromEnv()),
    undefined,
  );
  const given = { etag: '"v2"', 'x-request-id': 'from-the-service', 'content-type': 'text/plain', 'x-frame-options': 'DENY' };
  const lines = withVariable(JSON.stringify(given), () => answerHeaderLinesFromEnv())!;
  const [first, second] = [lines(JSON_TYPE), lines(JSON_TYPE)];
  const requestId = /^etag: "v2"\r\nx-frame-options: DENY\r\nx-request-id: ([0-9a-f-]{36})\r\ncontent-type: application\/json; charset=utf-8\r\n$/;
  assert.match(first, requestId);
  assert.match(requestId.exec(first)![1]!, UUID);
  assert.notEqual(requestId.exec(first)![1], requestId.exec(second)![1], 'a new request id per answer');
  const fixedOnly = withVariable(JSON.stringify({ vary: 'Accept-Encoding' }), () => answerHeaderLinesFromEnv())!;
  assert.equal(fixedOnly('application/json'), 'vary: Accept-Encoding\r\ncontent-type: application/json\r\n');
});

test("answerHeadersOf: the service's answer headers without those node:http writes itself or the body's framing", () => {
  const res = new Response('[]', {
    headers: { etag: '"inv-1"', date: 'Sat, 28 Nov 2026 19:00:00 GMT', connection: 'keep-alive', 'keep-alive': 'timeout=72', 'content-length': '2', 'x-request-id': 'r-1' },
  });
  assert.deepEqual(answerHeadersOf(res), { 'content-type': 'text/plain;charset=UTF-8', etag: '"inv-1"', 'x-request-id': 'r-1' });
});

test('sendJson and, without the variable (as in this process), sendOk: the status, the two headers and the body', () => {
  const written: unknown[] = [];
  const res = { writeHead: (...args: unknown[]) => written.push(args), end: (body: unknown) => written.push(body) } as unknown as ServerResponse;
  sendJson(res, 404, '{"code":"not_found"}');
  sendOk(res, Buffer.from('[1,2]'));
  assert.deepEqual(written, [
    [404, { 'content-type': JSON_TYPE, 'content-length': 20 }],
    '{"code":"not_found"}',
    [200, { 'content-type': JSON_TYPE, 'content-length': 5 }],
    Buffer.from('[1,2]'),
  ]);
});
