import fc from 'fast-check';
import type { KeySet } from '../support/service.js';
import { nearMisses } from '../support/service.js';

/** Which key a fuzzed request sends; only write and read are valid on the instance. */
export const KEY_KINDS = ['write', 'read', 'none', 'revoked', 'expired', 'staging', 'near-miss', 'garbage', 'other-scheme', 'empty-token', 'two-headers'] as const;
export type KeyKind = (typeof KEY_KINDS)[number];

/** One generated request, with what the oracle needs to judge its answer. */
export interface FuzzCase {
  method: string;
  target: string;
  version: string;
  keyKind: KeyKind;
  /** Header name and value pairs other than Authorization and Host, as sent. */
  headers: [string, string][];
  host: 'one' | 'none' | 'two';
  body: Buffer | undefined;
  framing: 'length' | 'chunked' | 'none' | 'short-length';
  /** Built to be unparseable as HTTP on purpose: 400 bad_request may come before authentication. */
  malformed: boolean;
  /** Sent as an HTTP/2 client's connection preface (and an empty SETTINGS frame) instead of the fields above. */
  h2Preface: boolean;
}

/** What an HTTP/2 client sends first (RFC 9113 3.4): the preface, then a SETTINGS frame, here an empty one. */
const H2_PREFACE = Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1'), Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0])]);

/** Node's limit on a request's head (its --max-http-header-size default), which the service keeps. */
export const MAX_HEADER_BYTES = 16 * 1024;

/** The raw bytes of a case, with its Authorization headers from `keys`. */
export function caseBytes(c: FuzzCase, keys: KeySet, nearMiss: (i: number) => string): Buffer {
  if (c.h2Preface) return H2_PREFACE;
  const head: [string, string][] = [];
  if (c.host !== 'none') head.push(['Host', 'inventory.test']);
  if (c.host === 'two') head.push(['Host', 'other.test']);
  for (const value of authorizationValues(c.keyKind, keys, nearMiss)) head.push(['Authorization', value]);
  head.push(...c.headers);
  let body: Buffer = Buffer.alloc(0);
  if (c.body !== undefined) {
    switch (c.framing) {
      case 'length':
        head.push(['Content-Length', String(c.body.length)]);
        body = c.body;
        break;
      case 'short-length':
        // The rest of the body reaches the server as the start of a second request on the connection.
        head.push(['Content-Length', String(Math.floor(c.body.length / 2))]);
        body = c.body;
        break;
      case 'chunked':
        head.push(['Transfer-Encoding', 'chunked']);
        body = c.body.length === 0 ? Buffer.from('0\r\n\r\n') : Buffer.concat([Buffer.from(`${c.body.length.toString(16)}\r\n`), c.body, Buffer.from('\r\n0\r\n\r\n')]);
        break;
      case 'none':
        body = c.body;
        break;
    }
  }
  const headText = `${c.method} ${c.target} ${c.version}\r\n${head.map(([n, v]) => `${n}: ${v}\r\n`).join('')}\r\n`;
  return Buffer.concat([Buffer.from(headText, 'latin1'), body]);
}

function authorizationValues(kind: KeyKind, keys: KeySet, nearMiss: (i: number) => string): string[] {
  switch (kind) {
    case 'write':
      return [`Bearer ${keys.write}`];
    case 'read':
      return [`bearer ${keys.read}`];
    case 'none':
      return [];
    case 'revoked':
      return [`Bearer ${keys.revoked}`];
    case 'expired':
      return [`Bearer ${keys.expired}`];
    case 'staging':
      return [`Bearer ${keys.staging}`];
    case 'near-miss':
      return [`Bearer ${nearMiss(0)}`];
    case 'garbage':
      return ['Bearer inv_live_AAAA'];
    case 'other-scheme':
      return [`Basic ${Buffer.from(`user:${keys.write}`).toString('base64')}`];
    case 'empty-token':
      return ['Bearer '];
    case 'two-headers':
      // A refused key first, a valid one second: the second must not authenticate the request.
      return [`Bearer ${nearMiss(0)}`, `Bearer ${keys.write}`];
  }
}

/**
 * The answer a case gets before it becomes a request (decisions 2.2, 7.3), whatever its key: 400
 * bad_request when the parser refuses its request line (an HTTP/2 preface included), else 431
 * headers_too_large when its head is over Node's limit; undefined when it parses.
 */
export function parseRefusal(c: FuzzCase, headBytes: number): 'bad_request' | 'headers_too_large' | undefined {
  if (c.malformed) return 'bad_request';
  return headBytes > MAX_HEADER_BYTES ? 'headers_too_large' : undefined;
}

/** Whether part of a case's body reaches the server as the start of a second request on its connection. */
export function bytesBehind(c: FuzzCase): boolean {
  return c.body !== undefined && c.body.length > 0 && (c.framing === 'none' || c.framing === 'short-length');
}

/** A case's class, for the test's diagnostics only: every class is held to the same rules. */
export function caseClass(c: FuzzCase, headBytes: number): string {
  if (c.h2Preface) return 'http2 preface';
  const refusal = parseRefusal(c, headBytes);
  if (refusal) return refusal === 'bad_request' ? 'malformed' : 'oversized headers';
  if (c.method === 'CONNECT') return 'connect';
  const expect = c.headers.find(([n]) => n.toLowerCase() === 'expect')?.[1];
  if (expect !== undefined && expect.toLowerCase() !== '100-continue') return 'bad expect';
  if (c.host === 'none' && c.version === 'HTTP/1.1') return 'no host';
  if (bytesBehind(c)) return 'bytes behind the request';
  return c.keyKind === 'write' || c.keyKind === 'read' ? 'valid key' : 'no valid key';
}

/** Paths that need no key, for GET and HEAD (/ redirects to the dashboard). */
const PUBLIC_PATHS = new Set(['/healthz', '/readyz', '/v1/openapi.json', '/']);

/** Whether a request with no valid key may be answered with something other than 401. */
export function isPublic(c: FuzzCase): boolean {
  const path = c.target.split('?')[0]!;
  // The router reads the asterisk-form target (meant for OPTIONS) as the root: GET * is GET /, a redirect.
  return (c.method === 'GET' || c.method === 'HEAD') && PUBLIC_PATHS.has(path === '*' ? '/' : path);
}

const safeText = (max: number) => fc.string({ unit: fc.constantFrom(...'abcxyzABC019-_.~!$&()*+,;=:@ '.split('')), maxLength: max });
const token = fc.string({ unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&\'*+-.^_`|~'.split('')), minLength: 1, maxLength: 12 });

function petIdArb(pets: number): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 6, arbitrary: fc.integer({ min: 1, max: pets }).map(String) },
    { weight: 1, arbitrary: fc.integer({ min: pets + 1, max: 1_000_000 }).map(String) },
    {
      weight: 2,
      arbitrary: fc.constantFrom(
        '0', '-0', '-1', '01', '+1', '1e3', '0x10', '1.0', '9223372036854775807', '-9223372036854775808',
        '9223372036854775808', '-9223372036854775809', '99999999999999999999999', '%31', '%zz', '%00', 'abc', '1%2F2', '..', '',
      ),
    },
    { weight: 1, arbitrary: fc.bigInt().map(String) },
    { weight: 1, arbitrary: fc.string({ unit: fc.constantFrom(...'0123456789-+.%aZ_~'.split('')), maxLength: 25 }) },
  );
}

const queryArb = fc.oneof(
  { weight: 5, arbitrary: fc.constant('') },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      '?limit=1', '?limit=500', '?limit=501', '?limit=0', '?limit=-1', '?limit=2.5', '?limit=99999999999999999999', '?limit=1&limit=2',
      '?cursor=h1', '?cursor=h0', '?cursor=h9223372036854775807', '?cursor=h9223372036854775808', '?cursor=h99999999999999999999',
      '?cursor=', '?cursor=x', '?x=1', '?', '?%zz', '?limit', '?cursor=h1&cursor=h2',
    ),
  },
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom('limit', 'cursor', 'q', 'a[b]'), safeText(20)).map(([k, v]) => `?${k}=${encodeURIComponent(v)}`) },
);

function targetArb(pets: number): fc.Arbitrary<{ target: string; malformed: boolean }> {
  const ok = (target: fc.Arbitrary<string>) => target.map((t) => ({ target: t, malformed: false }));
  return fc.oneof(
    { weight: 6, arbitrary: ok(queryArb.map((q) => `/v1/inventory${q}`)) },
    { weight: 8, arbitrary: ok(fc.tuple(petIdArb(pets), queryArb).map(([id, q]) => `/v1/inventory/${id}${q}`)) },
    { weight: 4, arbitrary: ok(fc.tuple(petIdArb(pets), queryArb).map(([id, q]) => `/v1/inventory/${id}/history${q}`)) },
    { weight: 4, arbitrary: ok(fc.tuple(petIdArb(pets), queryArb).map(([id, q]) => `/v1/inventory/${id}/adjustments${q}`)) },
    { weight: 4, arbitrary: ok(queryArb.map((q) => `/v1/inventory/batch${q}`)) },
    { weight: 2, arbitrary: ok(fc.tuple(fc.constantFrom('/healthz', '/readyz', '/v1/openapi.json', '/v1', '/', '/v2/inventory', '/v1/inventory/', '//v1/inventory', '/v1//inventory', '/V1/INVENTORY', '/v1/inventory/1/', '/v1/inventory/1/history/', '/v1/inventory/../healthz', '/healthz/', '*', 'http://inventory.test/v1/inventory'), queryArb).map(([p, q]) => `${p}${q}`)) },
    { weight: 2, arbitrary: ok(fc.array(fc.string({ unit: fc.constantFrom(...'abv1%0-._~:@!$&\'()*+,;='.split('')), maxLength: 8 }), { maxLength: 5 }).map((s) => `/${s.join('/')}`)) },
    { weight: 1, arbitrary: ok(fc.integer({ min: 100, max: 6000 }).map((n) => `/v1/inventory/${'9'.repeat(n)}`)) },
    // Bytes no request target may hold: the parser refuses them.
    { weight: 1, arbitrary: fc.constantFrom('/v1/inven tory', '/v1/\x01inventory', '/v1/inventory\x7f', '', '/v1/inventory/1 HTTP/1.1').map((t) => ({ target: t, malformed: true })) },
  );
}

const contentTypeArb = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom('application/json', 'application/json; charset=utf-8', 'application/merge-patch+json', 'application/merge-patch+json;charset=utf-8') },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      'APPLICATION/JSON', 'application/json; charset="utf-8"', 'application/json; charset=UTF8', 'application/json; charset=latin1',
      'application/json;charset=utf-16', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/jsonx',
      'application/json, text/plain', '*/*', '', 'application/json; q=1; x', 'application/problem+json',
    ),
  },
  { weight: 1, arbitrary: safeText(30) },
);

const quantityArb = fc.oneof(
  fc.integer({ min: 0, max: 2147483647 }),
  fc.constantFrom(-1, 2147483648, 1.5, -0, 1e308, Number.MAX_SAFE_INTEGER),
);

const reasonArb = fc.constantFrom('received', 'returned', 'correction', 'sold', 'damaged', 'lost', '', null, 1);

const deltaArb = fc.oneof(fc.integer({ min: -30, max: 30 }), fc.constantFrom(0, -2147483647, 2147483647, -2147483648, 1.5, '1', null));

/** One change of a batch as JSON text (petIds beyond 2^53 written as digits), valid or nearly. */
const changeArb: fc.Arbitrary<string> = fc
  .record({
    petId: fc.oneof(fc.integer({ min: -2, max: 25 }).map(String), fc.constantFrom('9007199254740993', '9223372036854775808', '"1"', '1.5')),
    count: fc.oneof(quantityArb.map((q) => `"quantity":${JSON.stringify(q)}`), deltaArb.map((d) => `"delta":${JSON.stringify(d)}`), fc.constantFrom('"quantity":1,"delta":1', '')),
    extra: fc.constantFrom('', ',"ifMatch":"\\"v1\\""', ',"ifMatch":"*"', ',"ifMatch":"v1"', ',"reason":"sold"', ',"reason":"lost"', ',"note":1'),
  })
  .map(({ petId, count, extra }) => `{"petId":${petId}${count ? `,${count}` : ''}${extra}}`);

const bodyArb: fc.Arbitrary<Buffer | undefined> = fc.oneof(
  { weight: 3, arbitrary: fc.constant(undefined) },
  { weight: 6, arbitrary: quantityArb.map((q) => Buffer.from(JSON.stringify({ quantity: q }))) },
  { weight: 2, arbitrary: fc.tuple(quantityArb, reasonArb).map(([q, r]) => Buffer.from(JSON.stringify({ quantity: q, reason: r }))) },
  // Adjustments (decisions 5.11) and batches (5.12), each with their near misses.
  { weight: 3, arbitrary: fc.tuple(deltaArb, reasonArb).map(([d, r]) => Buffer.from(JSON.stringify({ delta: d, reason: r }))) },
  { weight: 3, arbitrary: fc.array(changeArb, { maxLength: 5 }).map((changes) => Buffer.from(`{"changes":[${changes.join(',')}]}`)) },
  { weight: 3, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((v) => Buffer.from(JSON.stringify(v) ?? 'null')) },
  { weight: 1, arbitrary: fc.record({ quantity: quantityArb }, { requiredKeys: [] }).chain((o) => fc.dictionary(safeText(8), fc.jsonValue({ maxDepth: 2 })).map((extra) => Buffer.from(JSON.stringify({ ...extra, ...o })))) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '{"quantity":1,"__proto__":{"isAdmin":true}}', '{"quantity":1,"a":{"constructor":{"prototype":1}}}', '{"quantity":1}garbage', '{"quantity":01}',
      '{"quantity":1,"quantity":2}', '{"quantity":1e2}', '{"quantity":"1"}', '{quantity:1}', '[]', 'null', '""', ' ', '\u0000', '{"quantity":1,}', '\ufeff{"quantity":1}',
    ).map((s) => Buffer.from(s)),
  },
  { weight: 1, arbitrary: fc.integer({ min: 2, max: 7000 }).map((n) => Buffer.from(`{"quantity":1,"a":${'['.repeat(n)}${']'.repeat(n)}}`)) },
  { weight: 1, arbitrary: fc.integer({ min: 16 * 1024 - 20, max: 40 * 1024 }).map((n) => Buffer.from(`{"quantity":1,"reason":"${'x'.repeat(n)}"}`)) },
  { weight: 1, arbitrary: fc.uint8Array({ minLength: 1, maxLength: 64 }).map((b) => Buffer.from(b)) },
);

function extraHeadersArb(): fc.Arbitrary<[string, string][]> {
  const one: fc.Arbitrary<[string, string]> = fc.oneof(
    contentTypeArb.map((v): [string, string] => ['Content-Type', v]),
    fc.constantFrom('gzip', 'identity', 'br', 'deflate', 'gzip, identity', 'x-unknown').map((v): [string, string] => ['Content-Encoding', v]),
    fc.constantFrom('*', '"v1"', '"v2"', 'W/"v1"', '"v999999999999999"', '"v9999999999999999999"', '"v0"', 'v1', '"', '"v1", "v2"', '', '*, "v1"').map((v): [string, string] => ['If-Match', v]),
    fc.oneof(safeText(20), fc.constantFrom('x'.repeat(255), 'x'.repeat(256), '"quoted"', '""', 'a"b')).map((v): [string, string] => ['Idempotency-Key', v]),
    safeText(140).map((v): [string, string] => ['X-Request-Id', v]),
    fc.constantFrom('gzip', 'br', 'gzip;q=0, br;q=0', '*', 'identity;q=0', 'br;q=abc').map((v): [string, string] => ['Accept-Encoding', v]),
    fc.constantFrom('*', '"x"', 'W/"inv-1"', '').map((v): [string, string] => ['If-None-Match', v]),
    fc.constantFrom('203.0.113.1', 'garbage', '1.1.1.1, 2.2.2.2', '').map((v): [string, string] => ['X-Forwarded-For', v]),
    fc.constantFrom('100-continue', 'garbage').map((v): [string, string] => ['Expect', v]),
    fc.constantFrom('close', 'keep-alive', 'Upgrade', 'TE').map((v): [string, string] => ['Connection', v]),
    fc.constantFrom('websocket', 'h2c').map((v): [string, string] => ['Upgrade', v]),
    fc.constantFrom('http://evil.test', 'null').map((v): [string, string] => ['Origin', v]),
    fc.tuple(token, safeText(40)).map(([n, v]): [string, string] => [`X-${n}`, v]),
  );
  return fc.array(one, { maxLength: 5 });
}

/** A whole request: method, target, version, key, headers, body and framing. */
export function fuzzCaseArb(pets: number): fc.Arbitrary<FuzzCase> {
  return fc
    .record({
      method: fc.oneof(
        { weight: 10, arbitrary: fc.constantFrom('GET', 'PATCH', 'POST') },
        { weight: 3, arbitrary: fc.constantFrom('HEAD', 'PUT', 'DELETE', 'OPTIONS', 'TRACE', 'QUERY', 'PROPFIND') },
        { weight: 1, arbitrary: fc.constantFrom('CONNECT', 'PRI', 'get', 'PATCH2', 'G ET') },
      ),
      target: targetArb(pets),
      version: fc.oneof({ weight: 20, arbitrary: fc.constant('HTTP/1.1') }, { weight: 2, arbitrary: fc.constant('HTTP/1.0') }, { weight: 1, arbitrary: fc.constantFrom('HTTP/1.2', 'HTTP/9.9', 'HTTP/1', 'http/1.1', 'HTTP/2.0') }),
      keyKind: fc.oneof({ weight: 6, arbitrary: fc.constantFrom<KeyKind>('write', 'read') }, { weight: 5, arbitrary: fc.constantFrom(...KEY_KINDS) }),
      headers: extraHeadersArb(),
      host: fc.oneof({ weight: 20, arbitrary: fc.constant<'one'>('one') }, { weight: 1, arbitrary: fc.constantFrom<'none' | 'two'>('none', 'two') }),
      body: bodyArb,
      framing: fc.oneof({ weight: 12, arbitrary: fc.constant<'length'>('length') }, { weight: 2, arbitrary: fc.constant<'chunked'>('chunked') }, { weight: 1, arbitrary: fc.constantFrom<'none' | 'short-length'>('none', 'short-length') }),
      bigHeader: fc.oneof({ weight: 40, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.constantFrom(8 * 1024, 20 * 1024, 100 * 1024) }),
      // Half the PRI cases are a real HTTP/2 client's first bytes, the rest PRI as an HTTP/1 method.
      h2: fc.boolean(),
    })
    .map(({ method, target, version, bigHeader, headers, h2, ...rest }) => {
      const all: [string, string][] = bigHeader > 0 ? [...headers, ['X-Big', 'b'.repeat(bigHeader)]] : headers;
      // Node's parser takes HTTP/2.0 in an HTTP/1 request line, and "CONNECT  HTTP/1.2" (no target) as
      // an HTTP/0.9 CONNECT to "HTTP/1.2", whatever the version text: both are requests, answered like any other.
      const connectTo = method === 'CONNECT' && target.target === '';
      const badVersion = !connectTo && !['HTTP/1.1', 'HTTP/1.0', 'HTTP/2.0'].includes(version);
      const malformed = (target.malformed && !connectTo) || badVersion || ['get', 'PATCH2', 'G ET', 'PRI'].includes(method);
      if (method === 'PRI' && h2) return { ...rest, method, target: '*', version: 'HTTP/2.0', headers: [], host: 'none' as const, body: undefined, malformed, h2Preface: true };
      return { ...rest, method, target: target.target, version, headers: all, malformed, h2Preface: false };
    });
}

/** For a near-miss case: the write key's variants, chosen by index. */
export function nearMissPicker(keys: KeySet): (i: number) => string {
  const variants = [...nearMisses(keys.write), ...nearMisses(keys.read)];
  let next = 0;
  return () => variants[next++ % variants.length]!;
}
