import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { describe, test } from 'node:test';
import { ApiError, StoreUnavailableError } from '../../src/errors.js';
import { CORS_EXPOSE_HEADERS } from '../../src/pipeline/cors.js';
import { JSON_CONTENT_SECURITY_POLICY, memoryRule, SECURITY_HEADERS, type Rule } from '../../src/pipeline/pipeline.js';
import { shuttingDown } from '../../src/pipeline/rules.js';
import type { InventoryItem } from '../../src/schemas/inventory.js';
import { BACKENDS, backendSkip } from '../support/backends.js';
import { assertError, buildTestApp, failingOn, type TestApp, type TestResponse } from '../support/app.js';

/**
 * The fast lane (src/http/fast-lane.ts) answers the hot requests before Fastify. Here every
 * request goes both ways on one app and store: over a socket, where the lane takes it, and
 * through app.inject(), which only Fastify's routes see. The answers must be the same.
 */

// 60 entries: a list over 1 KiB, so br and gzip are offered.
const PETS: InventoryItem[] = Array.from({ length: 60 }, (_, i) => ({ petId: BigInt(i + 1), quantity: i, status: 'available' }));

/** Headers only a real connection carries. */
const TRANSPORT_HEADERS = new Set(['date', 'connection', 'keep-alive']);

interface Sent {
  method: string;
  url: string;
  key?: string;
  headers: Record<string, string>;
  body?: string;
}

interface Answer {
  status: number;
  headers: Record<string, unknown>;
  /** The body's bytes as latin1, so compressed bodies compare exactly. */
  bytes: string;
}

function answerOf(status: number, headers: Record<string, unknown>, body: Buffer): Answer {
  const kept = Object.entries(headers)
    .filter(([name]) => !TRANSPORT_HEADERS.has(name))
    // Each request spends one of the key's quota, so the two lanes' counts differ by one: compare the header's form.
    .map(([name, value]) => [name, name === 'ratelimit' ? String(value).replace(/=\d+/g, '=N') : value] as const);
  return { status, headers: Object.fromEntries(kept.sort(([a], [b]) => a.localeCompare(b))), bytes: body.toString('latin1') };
}

/** The key lookups bothLanes made, each from a client address of its own. */
let fills = 0;

/** Sends `req` over the socket (the lane, unless `expectLane` is false) and through inject (Fastify). */
async function bothLanes(api: TestApp, req: Sent, expectLane = true): Promise<{ lane: Answer; full: Answer }> {
  const headers = { ...req.headers, ...(req.key ? { authorization: `Bearer ${req.key}` } : {}) };
  // The lane takes only keys in the authenticator's cache, each lookup for 2 s from when it was made, which a use never
  // renews: a lookup made just before, forgotten first, so it is fresh however loaded the machine. It comes from a client
  // of its own, which no throttle of the test's clients holds back before the key is looked up.
  if (req.key) {
    api.app.authenticator.forget();
    fills++;
    const remoteAddress = `10.${(fills >> 8) & 255}.${fills & 255}.1`;
    await api.app.inject({ method: 'GET', url: '/v1/inventory/0', remoteAddress, headers: { authorization: `Bearer ${req.key}` } });
  }
  const before = api.app.fastLane.answered;
  const lane = await overSocket(api, req.method, req.url, headers, req.body);
  assert.equal(api.app.fastLane.answered - before, expectLane ? 1 : 0, `the fast lane took ${req.method} ${req.url}: ${expectLane}`);
  const res = await api.app.inject({ method: req.method as 'GET', url: req.url, headers, ...(req.body !== undefined ? { payload: req.body } : {}) });
  return { lane, full: answerOf(res.statusCode, res.headers, res.rawPayload) };
}

/** One request on its own connection. */
function overSocket(api: TestApp, method: string, path: string, headers: Record<string, string>, body: string | undefined): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const framed = body === undefined ? headers : { 'content-length': String(Buffer.byteLength(body)), ...headers };
    const req = httpRequest(`${api.baseUrl}${path}`, { method, headers: framed, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve(answerOf(res.statusCode ?? 0, res.headers, Buffer.concat(chunks))));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** The response headers of one request on its own connection, as the server sent them. */
function overSocketRaw(api: TestApp, method: string, path: string, headers: Record<string, string>): Promise<Record<string, string | string[] | undefined>> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${api.baseUrl}${path}`, { method, headers, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.headers));
    });
    req.on('error', reject);
    req.end();
  });
}

function patchOf(api: TestApp, petId: string, body: string, headers: Record<string, string> = {}): Sent {
  return { method: 'PATCH', url: `/v1/inventory/${petId}`, key: api.keys.write, headers: { 'content-type': 'application/json', 'x-request-id': 'same-1', ...headers }, body };
}

function adjustOf(api: TestApp, petId: string, body: string, headers: Record<string, string> = {}): Sent {
  return { ...patchOf(api, petId, body, headers), method: 'POST', url: `/v1/inventory/${petId}/adjustments` };
}

/** The standard rules with `rule` right after authentication. */
function afterAuthentication(standard: readonly Rule[], rule: Rule): Rule[] {
  const at = standard.findIndex((r) => r.name === 'authentication') + 1;
  return [...standard.slice(0, at), rule, ...standard.slice(at)];
}

function assertErrorAnswer(answer: Answer, status: number, code: string, index?: number): void {
  assertError({ status: answer.status, headers: answer.headers as TestResponse['headers'], text: answer.bytes, json: <T>() => JSON.parse(answer.bytes) as T }, status, code, index);
}

for (const backend of BACKENDS) {
  const skip = await backendSkip(backend);
  describe(`fast lane on ${backend}: the same answers as Fastify's routes`, { skip }, () => {
    test('GET /v1/inventory: identity, br, gzip, 304 and a stale If-None-Match', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PETS });
      const get = (headers: Record<string, string> = {}): Sent => ({ method: 'GET', url: '/v1/inventory', key: api.keys.read, headers: { 'x-request-id': 'same-1', ...headers } });
      const plain = await bothLanes(api, get());
      assert.deepEqual(plain.lane, plain.full);
      assert.equal(plain.lane.status, 200);
      assert.equal((JSON.parse(plain.lane.bytes) as unknown[]).length, PETS.length);
      for (const encoding of ['br', 'gzip', 'gzip;q=0.5, br;q=0.1', 'identity']) {
        const { lane, full } = await bothLanes(api, get({ 'accept-encoding': encoding }));
        assert.deepEqual(lane, full, encoding);
      }
      const etag = String(plain.lane.headers.etag);
      const notModified = await bothLanes(api, get({ 'if-none-match': etag }));
      assert.deepEqual(notModified.lane, notModified.full);
      assert.equal(notModified.lane.status, 304);
      const stale = await bothLanes(api, get({ 'if-none-match': '"inv-0"' }));
      assert.deepEqual(stale.lane, stale.full);
      assert.equal(stale.lane.status, 200);
    });

    test('PATCH: every refusal after the body is read, in the Error shape, as Fastify answers it', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PETS });
      const cases: [string, string, Record<string, string>, number, string][] = [
        ['1', '{', {}, 400, 'malformed_json'],
        ['1', '  ', {}, 400, 'missing_field'],
        ['1', 'null', {}, 400, 'invalid_body'],
        ['1', '[{"quantity":5}]', {}, 400, 'invalid_body'],
        ['1', '{}', {}, 400, 'missing_field'],
        ['1', '{"quantity":-1}', {}, 400, 'invalid_quantity'],
        ['1', '{"quantity":1.5}', {}, 400, 'invalid_quantity'],
        ['1', '{"quantity":5,"extra":1}', {}, 400, 'unknown_field'],
        ['1', '{"quantity":5,"__proto__":{"x":1}}', {}, 400, 'unknown_field'],
        ['1', '{"quantity":5,"reason":"stolen"}', {}, 400, 'invalid_reason'],
        ['999999', '{"quantity":5}', {}, 404, 'not_found'],
        ['1', '{"quantity":5}', { 'if-match': '"v999"' }, 412, 'precondition_failed'],
        ['1', '{"quantity":5}', { 'if-match': 'v1' }, 400, 'invalid_parameter'],
        ['1', '{"quantity":5}', { 'idempotency-key': 'has space' }, 400, 'invalid_parameter'],
        // 6,077 arrays deep (12 KB): refused without a walk that could overflow the stack.
        ['1', `{"quantity":1,"a":${'['.repeat(6077)}${']'.repeat(6077)}}`, {}, 400, 'invalid_body'],
        ['1', `{"quantity":1,"a":{"b":${'['.repeat(31)}${']'.repeat(31)}}}`, {}, 400, 'invalid_body'],
        ['1', `{"quantity":1,"a":${'['.repeat(31)}${']'.repeat(31)}}`, {}, 400, 'unknown_field'],
        ['1', `{"quantity":1,"a":${'[{"b":'.repeat(20)}{"__proto__":1}${'}]'.repeat(20)}}`, {}, 400, 'invalid_body'],
        ['1', '{"quantity":5}', { 'content-encoding': 'gzip' }, 415, 'unsupported_media_type'],
        ['1', '{"quantity":5}', { 'content-encoding': 'identity, br' }, 415, 'unsupported_media_type'],
        ['1', '{"quantity":5}', { 'content-encoding': 'x-custom' }, 415, 'unsupported_media_type'],
      ];
      for (const [petId, body, headers, status, code] of cases) {
        const { lane, full } = await bothLanes(api, patchOf(api, petId, body, headers));
        assert.deepEqual(lane, full, `${body} ${JSON.stringify(headers)}`);
        assertErrorAnswer(lane, status, code);
      }
      // An empty body names quantity alone as required, in both lanes, as no body at all does (Fastify's alone).
      const empty = await bothLanes(api, patchOf(api, '1', '  '));
      const noBodyMessage = 'The request body is empty: send a JSON object with "quantity" (required) and "reason" (optional).';
      assert.equal((JSON.parse(empty.lane.bytes) as { message: string }).message, noBodyMessage);
      const none = await bothLanes(api, { method: 'PATCH', url: '/v1/inventory/1', key: api.keys.write, headers: { 'x-request-id': 'same-1' } }, false);
      assert.deepEqual(none.lane, none.full);
      assertErrorAnswer(none.lane, 400, 'missing_field');
      assert.equal((JSON.parse(none.lane.bytes) as { message: string }).message, noBodyMessage);
    });

    test('PATCH: a refused Content-Encoding stores nothing; identity is the plain body', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PETS });
      const { lane, full } = await bothLanes(api, patchOf(api, '4', '{"quantity":77}', { 'content-encoding': 'gzip' }));
      assert.deepEqual(lane, full);
      assertErrorAnswer(lane, 415, 'unsupported_media_type');
      const entry = await api.request({ method: 'GET', url: '/v1/inventory/4', key: api.keys.read });
      assert.equal(entry.json<{ quantity: number }>().quantity, 3, 'neither lane applied it');
      const plain = await bothLanes(api, patchOf(api, '4', '{"quantity":77}', { 'content-encoding': 'identity' }));
      assert.deepEqual([plain.lane.status, plain.full.status], [200, 200]);
    });

    test('PATCH: an update, an idempotent replay and a reused key answer alike', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PETS });
      const update = await bothLanes(api, patchOf(api, '2', '{"quantity":7,"reason":"received"}'));
      const { etag: laneTag, ...laneRest } = update.lane.headers;
      const { etag: fullTag, ...fullRest } = update.full.headers;
      assert.deepEqual({ ...update.lane, headers: laneRest }, { ...update.full, headers: fullRest });
      assert.equal(update.lane.status, 200);
      assert.deepEqual([laneTag, fullTag], ['"v2"', '"v3"'], 'each lane applied its own change');

      const keyed = patchOf(api, '3', '{"quantity":9}', { 'idempotency-key': 'k-1' });
      await api.app.inject({ method: 'PATCH', url: keyed.url, headers: { ...keyed.headers, authorization: `Bearer ${api.keys.write}` }, payload: keyed.body });
      const replay = await bothLanes(api, keyed);
      assert.deepEqual(replay.lane, replay.full);
      assert.equal(replay.lane.headers['idempotent-replayed'], 'true');
      const reused = await bothLanes(api, { ...keyed, body: '{"quantity":10}' });
      assert.deepEqual(reused.lane, reused.full);
      assertErrorAnswer(reused.lane, 422, 'idempotency_key_reused');
    });

    test('POST …/adjustments: every refusal after the body is read, in the Error shape, as Fastify answers it', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PETS });
      // Pet 5 holds 4.
      const cases: [string, string, Record<string, string>, number, string][] = [
        ['5', '{', {}, 400, 'malformed_json'],
        ['5', '  ', {}, 400, 'missing_field'],
        ['5', '{"reason":"sold"}', {}, 400, 'missing_field'],
        ['5', '[{"delta":-1}]', {}, 400, 'invalid_body'],
        ['5', '{"delta":0}', {}, 400, 'invalid_quantity'],
        ['5', '{"delta":1.5}', {}, 400, 'invalid_quantity'],
        ['5', '{"delta":"-1"}', {}, 400, 'invalid_quantity'],
        ['5', '{"delta":-2147483648}', {}, 400, 'invalid_quantity'],
        ['5', '{"delta":2147483647}', {}, 400, 'invalid_quantity'],
        ['5', '{"delta":-1,"quantity":3}', {}, 400, 'unknown_field'],
        ['5', '{"delta":-1,"__proto__":{"x":1}}', {}, 400, 'unknown_field'],
        ['5', '{"delta":-1,"reason":"stolen"}', {}, 400, 'invalid_reason'],
        ['01', '{"delta":-1}', {}, 400, 'invalid_pet_id'],
        // The batch's path with a segment more is the adjustment's, with a petId that is not one.
        ['batch', '{"delta":-1}', {}, 400, 'invalid_pet_id'],
        ['999999', '{"delta":-1}', {}, 404, 'not_found'],
        ['5', '{"delta":-5,"reason":"sold"}', {}, 409, 'insufficient_stock'],
        ['5', '{"delta":-1}', { 'if-match': '"v999"' }, 412, 'precondition_failed'],
        // If-Match is judged before the stock: 412 before 409.
        ['5', '{"delta":-5}', { 'if-match': '"v999"' }, 412, 'precondition_failed'],
        ['5', '{"delta":-1}', { 'if-match': 'v1' }, 400, 'invalid_parameter'],
        ['5', '{"delta":-1}', { 'idempotency-key': 'has space' }, 400, 'invalid_parameter'],
        ['5', '{"delta":-1}', { 'content-encoding': 'gzip' }, 415, 'unsupported_media_type'],
      ];
      for (const [petId, body, headers, status, code] of cases) {
        const { lane, full } = await bothLanes(api, adjustOf(api, petId, body, headers));
        assert.deepEqual(lane, full, `${petId} ${body} ${JSON.stringify(headers)}`);
        assertErrorAnswer(lane, status, code);
      }
      const insufficient = await bothLanes(api, adjustOf(api, '5', '{"delta":-5}'));
      assert.match((JSON.parse(insufficient.lane.bytes) as { message: string }).message, /Pet 5 has 4 on hand/);
      const empty = await bothLanes(api, adjustOf(api, '5', '  '));
      assert.match((JSON.parse(empty.lane.bytes) as { message: string }).message, /"delta" \(required\) and "reason" \(optional\)/);
      const entry = await api.request({ method: 'GET', url: '/v1/inventory/5', key: api.keys.read });
      assert.equal(entry.json<{ quantity: number }>().quantity, 4, 'no refusal changed the count');
      assert.equal(entry.headers.etag, '"v1"');
    });

    test('POST …/adjustments: a sale, an idempotent replay (a refusal too) and a reused key answer alike', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PETS });
      // Pet 20 holds 19: each lane sells one, so the bodies differ in the count alone (18, then 17).
      const sale = await bothLanes(api, adjustOf(api, '20', '{"delta":-1,"reason":"sold"}'));
      const { etag: laneTag, ...laneRest } = sale.lane.headers;
      const { etag: fullTag, ...fullRest } = sale.full.headers;
      assert.deepEqual({ ...sale.lane, headers: laneRest, bytes: '' }, { ...sale.full, headers: fullRest, bytes: '' });
      assert.equal(sale.lane.status, 200);
      assert.deepEqual([sale.lane.bytes, sale.full.bytes], ['{"petId":20,"quantity":18,"status":"available","reserved":0,"available":18}', '{"petId":20,"quantity":17,"status":"available","reserved":0,"available":17}']);
      assert.deepEqual([laneTag, fullTag], ['"v2"', '"v3"'], 'each lane applied its own change');

      const keyed = adjustOf(api, '3', '{"delta":-1}', { 'idempotency-key': 'sale-1' });
      await api.app.inject({ method: 'POST', url: keyed.url, headers: { ...keyed.headers, authorization: `Bearer ${api.keys.write}` }, payload: keyed.body });
      const replay = await bothLanes(api, keyed);
      assert.deepEqual(replay.lane, replay.full);
      assert.equal(replay.lane.status, 200);
      assert.equal(replay.lane.headers['idempotent-replayed'], 'true');
      const reused = await bothLanes(api, { ...keyed, body: '{"delta":-2}' });
      assert.deepEqual(reused.lane, reused.full);
      assertErrorAnswer(reused.lane, 422, 'idempotency_key_reused');
      // A key used for a PATCH cannot be replayed as an adjustment: another operation.
      const set = patchOf(api, '4', '{"quantity":9}', { 'idempotency-key': 'set-1' });
      const patched = await api.app.inject({ method: 'PATCH', url: set.url, headers: { ...set.headers, authorization: `Bearer ${api.keys.write}` }, payload: set.body });
      assert.equal(patched.statusCode, 200);
      const crossed = await bothLanes(api, adjustOf(api, '4', '{"delta":1}', { 'idempotency-key': 'set-1' }));
      assert.deepEqual(crossed.lane, crossed.full);
      assertErrorAnswer(crossed.lane, 422, 'idempotency_key_reused');
      // A refusal is kept and replayed too.
      const short = adjustOf(api, '3', '{"delta":-100}', { 'idempotency-key': 'sale-2' });
      await api.app.inject({ method: 'POST', url: short.url, headers: { ...short.headers, authorization: `Bearer ${api.keys.write}` }, payload: short.body });
      const refused = await bothLanes(api, short);
      assert.deepEqual(refused.lane, refused.full);
      assertErrorAnswer(refused.lane, 409, 'insufficient_stock');
      assert.equal(refused.lane.headers['idempotent-replayed'], 'true');
      const entry = await api.request({ method: 'GET', url: '/v1/inventory/3', key: api.keys.read });
      assert.equal(entry.json<{ quantity: number }>().quantity, 1, 'the keyed sale applied once');
    });

    test('reservations: a creation, its commit, release and read answer as Fastify answers them; every refusal in the Error shape', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PETS });
      const create = (body: string, headers: Record<string, string> = {}): Sent => ({
        method: 'POST',
        url: '/v1/reservations',
        key: api.keys.write,
        headers: { 'content-type': 'application/json', 'x-request-id': 'same-1', ...headers },
        body,
      });
      const end = (id: string, how: 'commit' | 'release'): Sent => ({ method: 'POST', url: `/v1/reservations/${id}/${how}`, key: api.keys.write, headers: { 'x-request-id': 'same-1' } });
      // Each lane holds its own reservation: the same answer but for the id, its Location and its times.
      const made = await bothLanes(api, create('{"items":[{"petId":10,"quantity":2}],"reference":"order-1"}'));
      const general = (a: Answer) => ({
        ...a,
        headers: { ...a.headers, location: String(a.headers.location).replace(/res_\w+/, 'res_X') },
        bytes: a.bytes.replace(/res_\w+/, 'res_X').replace(/\d{4}-\d\d-\d\dT[\d:.]+Z/g, 'T'),
      });
      assert.deepEqual(general(made.lane), general(made.full));
      assert.equal(made.lane.status, 201);
      const laneId = (JSON.parse(made.lane.bytes) as { id: string }).id;
      const fullId = (JSON.parse(made.full.bytes) as { id: string }).id;
      // Pet 10 holds 9, 4 of them held now: 5 left.
      const refusals: [string, number, string, number?][] = [
        ['{', 400, 'malformed_json'],
        ['  ', 400, 'missing_field'],
        ['{"items":[]}', 400, 'invalid_body'],
        ['{"items":[{"petId":10,"quantity":0}]}', 400, 'invalid_quantity', 0],
        ['{"items":[{"petId":10,"quantity":1}],"extra":1}', 400, 'unknown_field'],
        ['{"items":[{"petId":10,"quantity":1},{"petId":10,"quantity":1}]}', 400, 'invalid_body', 1],
        ['{"items":[{"petId":999999,"quantity":1}]}', 404, 'not_found', 0],
        ['{"items":[{"petId":10,"quantity":6}]}', 409, 'insufficient_stock', 0],
      ];
      for (const [body, status, code, index] of refusals) {
        const { lane, full } = await bothLanes(api, create(body));
        assert.deepEqual(lane, full, body);
        assertErrorAnswer(lane, status, code, index);
      }
      const zero = await bothLanes(api, create('{"items":[{"petId":10,"quantity":0}]}'));
      assert.match((JSON.parse(zero.lane.bytes) as { message: string }).message, /^items\[0\]: quantity must be an integer from 1 to 2147483647; got 0\.$/);
      const read = (id: string): Sent => ({ method: 'GET', url: `/v1/reservations/${id}`, key: api.keys.write, headers: { 'x-request-id': 'same-1' } });
      const got = await bothLanes(api, read(laneId));
      assert.deepEqual(got.lane, got.full);
      assert.equal(got.lane.status, 200);
      // The first commit of each lane's reservation is its own; a commit again answers the same 200 in either lane.
      const committed = await overSocket(api, 'POST', `/v1/reservations/${laneId}/commit`, { authorization: `Bearer ${api.keys.write}` }, undefined);
      assert.equal(committed.status, 200);
      const again = await bothLanes(api, end(laneId, 'commit'));
      assert.deepEqual(again.lane, again.full);
      assert.equal(again.lane.status, 200);
      const released = await bothLanes(api, end(fullId, 'release'));
      assert.equal(released.lane.status, 200);
      assert.deepEqual(released.lane, released.full);
      for (const [req, status, code] of [
        [end(laneId, 'release'), 409, 'reservation_not_active'],
        [end(fullId, 'commit'), 409, 'reservation_not_active'],
        [end('res_000000000000000000000000', 'commit'), 404, 'not_found'],
        [end('nope', 'release'), 404, 'not_found'],
        [read('res_000000000000000000000000'), 404, 'not_found'],
        [{ ...end(laneId, 'commit'), key: api.keys.read }, 403, 'forbidden'],
        [{ ...create('{"items":[{"petId":10,"quantity":1}]}'), key: api.keys.read }, 403, 'forbidden'],
        [{ ...read(laneId), key: api.keys.read }, 403, 'forbidden'],
        [{ ...read(laneId), key: undefined }, 401, 'unauthorized'],
      ] as const) {
        const { lane, full } = await bothLanes(api, req);
        assert.deepEqual(lane, full, `${req.method} ${req.url}`);
        assertErrorAnswer(lane, status, code);
      }
      const entry = await api.request({ method: 'GET', url: '/v1/inventory/10', key: api.keys.read });
      assert.deepEqual(entry.json(), { petId: 10, quantity: 7, status: 'available', reserved: 0, available: 7 }, "the lane's sale of 2, and nothing held");
    });

    test('reservations: an idempotent creation replays the same reservation in either lane, holding once', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PETS });
      const keyed: Sent = {
        method: 'POST',
        url: '/v1/reservations',
        key: api.keys.write,
        headers: { 'content-type': 'application/json', 'x-request-id': 'same-1', 'idempotency-key': 'cart-1' },
        body: '{"items":[{"petId":30,"quantity":3}]}',
      };
      const first = await api.app.inject({ method: 'POST', url: keyed.url, headers: { ...keyed.headers, authorization: `Bearer ${api.keys.write}` }, payload: keyed.body });
      assert.equal(first.statusCode, 201);
      const replay = await bothLanes(api, keyed);
      assert.deepEqual(replay.lane, replay.full);
      assert.equal(replay.lane.headers['idempotent-replayed'], 'true');
      assert.equal(replay.lane.bytes, first.body);
      const reused = await bothLanes(api, { ...keyed, body: '{"items":[{"petId":30,"quantity":4}]}' });
      assert.deepEqual(reused.lane, reused.full);
      assertErrorAnswer(reused.lane, 422, 'idempotency_key_reused');
      const entry = await api.request({ method: 'GET', url: '/v1/inventory/30', key: api.keys.read });
      assert.equal(entry.json<{ reserved: number }>().reserved, 3, 'held once');
    });

    test('POST …/adjustments: REQUIRE_IF_MATCH does not apply, in either lane', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PETS, config: { REQUIRE_IF_MATCH: 'true' } });
      const { lane, full } = await bothLanes(api, adjustOf(api, '20', '{"delta":-1}'));
      assert.deepEqual([lane.status, full.status], [200, 200]);
      const patched = await bothLanes(api, patchOf(api, '20', '{"quantity":5}'));
      assertErrorAnswer(patched.lane, 428, 'precondition_required');
    });

    test('PATCH: 428 when If-Match is required', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PETS, config: { REQUIRE_IF_MATCH: 'true' } });
      const { lane, full } = await bothLanes(api, patchOf(api, '1', '{"quantity":5}'));
      assert.deepEqual(lane, full);
      assertErrorAnswer(lane, 428, 'precondition_required');
    });

    test('PATCH: 503 for a store outage and a generic 500 for anything else, logged with the request id', async (t) => {
      const failures = [
        [new StoreUnavailableError('connection refused'), 503, 'service_unavailable'],
        [new Error('disk I/O error at /srv/data'), 500, 'internal_error'],
      ] as const;
      for (const [error, status, code] of failures) {
        const api = await buildTestApp(t, { backend, transport: 'http', items: PETS, wrapStore: (store) => failingOn(store, 'applyChange', error) });
        for (const req of [patchOf(api, '1', '{"quantity":5}'), adjustOf(api, '1', '{"delta":1}')]) {
          const requestId = `fail-${status}-${req.method}`;
          const { lane, full } = await bothLanes(api, { ...req, headers: { ...req.headers, 'x-request-id': requestId } });
          assert.deepEqual(lane, full, req.method);
          assertErrorAnswer(lane, status, code);
          if (status === 500) {
            const logged = api.logs().filter((l) => l.requestId === requestId && l.level === 50);
            assert.equal(logged.length, 2, 'an error line from each lane');
            assert.ok(logged.every((l) => JSON.stringify(l).includes('disk I/O error')));
          }
        }
      }
    });

    test('refusals the rules decide from memory are answered by the lane too: a cached unknown key, no key, another scope, a bad petId', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PETS });
      const cases: [Sent, number, string][] = [
        [{ method: 'GET', url: '/v1/inventory', key: `${api.keys.read}x`, headers: { 'x-request-id': 'same-1' } }, 401, 'unauthorized'],
        [{ method: 'GET', url: '/v1/inventory', headers: { 'x-request-id': 'same-1' } }, 401, 'unauthorized'],
        [{ ...patchOf(api, '1', '{"quantity":5}'), key: api.keys.read }, 403, 'forbidden'],
        [patchOf(api, '01', '{"quantity":5}'), 400, 'invalid_pet_id'],
        [{ ...adjustOf(api, '1', '{"delta":-1}'), key: api.keys.read }, 403, 'forbidden'],
        [{ ...adjustOf(api, '1', '{"delta":-1}'), key: undefined }, 401, 'unauthorized'],
      ];
      for (const [req, status, code] of cases) {
        const { lane, full } = await bothLanes(api, req);
        assert.deepEqual(lane, full, `${req.method} ${req.url}`);
        assertErrorAnswer(lane, status, code);
      }
    });

    test('left to Fastify untouched: queries, other paths, other media types, oversized and empty bodies', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PETS, config: { BODY_LIMIT: '64' } });
      const get = (url: string, key: string): Sent => ({ method: 'GET', url, key, headers: { 'x-request-id': 'same-1' } });
      const left: Sent[] = [
        get('/v1/inventory?limit=1', api.keys.read),
        get('/v1/inventory/', api.keys.read),
        patchOf(api, '1?x=1', '{"quantity":5}'),
        patchOf(api, '%zz', '{"quantity":5}'),
        patchOf(api, '1', '{"quantity":5}', { 'content-type': 'text/plain' }),
        patchOf(api, '1', '{"quantity":5}', { 'content-type': 'application/json; charset=latin1' }),
        patchOf(api, '1', `{"quantity":5,"reason":"${'x'.repeat(64)}"}`),
        patchOf(api, '1', ''),
        adjustOf(api, '1?x=1', '{"delta":1}'),
        adjustOf(api, '%zz', '{"delta":1}'),
        { ...adjustOf(api, '1', '{"delta":1}'), url: '/v1/inventory/1/adjustments/' },
        adjustOf(api, '1', '{"delta":1}', { 'content-type': 'text/plain' }),
        adjustOf(api, '1', `{"delta":1,"reason":"${'x'.repeat(64)}"}`),
        adjustOf(api, '1', ''),
        { ...adjustOf(api, '1', '{"delta":1}'), method: 'PATCH' },
        { ...patchOf(api, '1', '{"quantity":5}'), method: 'POST' },
        // The batch stays with Fastify (its own body limit): refused here for a change without delta or quantity.
        { ...adjustOf(api, '1', '{"changes":[{"petId":1}]}'), url: '/v1/inventory/batch' },
        { ...adjustOf(api, '1', '{"items":[]}'), url: '/v1/reservations?x=1' },
        { ...adjustOf(api, '1', `{"items":[],"reference":"${'x'.repeat(64)}"}`), url: '/v1/reservations' },
        // An operation that takes no body: one sent anyway, or announced by a Content-Type, is Fastify's to judge.
        { ...adjustOf(api, '1', '{'), url: '/v1/reservations/res_000000000000000000000000/commit' },
        { method: 'POST', url: '/v1/reservations/res_000000000000000000000000/release', key: api.keys.write, headers: { 'content-type': 'text/plain', 'x-request-id': 'same-1' } },
        { method: 'POST', url: '/v1/reservations/res_%30/commit', key: api.keys.write, headers: { 'x-request-id': 'same-1' } },
      ];
      for (const req of left) {
        const { lane, full } = await bothLanes(api, req, false);
        assert.deepEqual(lane, full, `${req.method} ${req.url}`);
        assert.ok(lane.status >= 400, `${req.method} ${req.url} is refused`);
      }
    });

    test('a key not in the cache yet: the lane runs the rules it can, then Fastify continues the same list', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PETS });
      const before = api.app.fastLane.answered;
      const first = await overSocket(api, 'GET', '/v1/inventory', { authorization: `Bearer ${api.keys.read}`, 'x-request-id': 'first-use' }, undefined);
      assert.equal(first.status, 200);
      assert.equal(api.app.fastLane.answered, before, 'answered by Fastify');
      const lines = api.logs().filter((l) => l.requestId === 'first-use').map((l) => l.msg);
      assert.deepEqual(lines, ['incoming request', 'request completed'], 'one context: its lines are written once');
    });

    test('an address over the failed-authentication limit is refused 429 by either lane, even with a good key', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PETS, config: { AUTH_FAILURES_PER_MINUTE: '2' } });
      const get = (key: string) => overSocket(api, 'GET', '/v1/inventory', { authorization: `Bearer ${key}` }, undefined);
      assert.equal((await get(api.keys.read)).status, 200, 'fills the key cache');
      for (let i = 0; i < 2; i++) assertErrorAnswer(await get(`${api.keys.read}x`), 401, 'unauthorized');
      // inject() comes from 127.0.0.1 too, so both lanes see the same throttled address.
      const { lane, full } = await bothLanes(api, { method: 'GET', url: '/v1/inventory', key: api.keys.read, headers: { 'x-request-id': 'same-1' } });
      assertErrorAnswer(lane, 429, 'rate_limited');
      // Retry-After counts down the same window in whole seconds; it may tick between the two requests.
      const { 'retry-after': laneRetry, ...laneRest } = lane.headers;
      const { 'retry-after': fullRetry, ...fullRest } = full.headers;
      assert.deepEqual({ ...lane, headers: laneRest, bytes: '' }, { ...full, headers: fullRest, bytes: '' });
      assert.ok(Math.abs(Number(laneRetry) - Number(fullRetry)) <= 1 && Number(laneRetry) > 0, `${String(laneRetry)} ~ ${String(fullRetry)}`);
    });

    test('behind a proxy (TRUST_PROXY) both lanes key the throttle and the log lines by the forwarded client address', async (t) => {
      for (const level of ['info', 'warn']) {
        const api = await buildTestApp(t, { backend, transport: 'http', items: PETS, config: { TRUST_PROXY: '1', LOG_LEVEL: level, AUTH_FAILURES_PER_MINUTE: '1' } });
        const from = (client: string, key: string, id: string) => ({ method: 'GET', url: '/v1/inventory', key, headers: { 'x-forwarded-for': client, 'x-request-id': id } });
        const plain = await bothLanes(api, from('203.0.113.7', api.keys.read, 'same-1'));
        assert.deepEqual(plain.lane, plain.full, level);
        assertErrorAnswer((await bothLanes(api, from('203.0.113.7', `${api.keys.read}x`, 'bad-1'))).lane, 401, 'unauthorized');
        const throttled = await bothLanes(api, from('203.0.113.7', api.keys.read, 'same-2'));
        assertErrorAnswer(throttled.lane, 429, 'rate_limited');
        assertErrorAnswer(throttled.full, 429, 'rate_limited');
        const other = await bothLanes(api, from('203.0.113.8', api.keys.read, 'same-3'));
        assert.deepEqual(other.lane, other.full);
        assert.equal(other.lane.status, 200, 'another client behind the same proxy is not throttled');
        if (level === 'info') {
          const seen = api.logs().filter((l) => l.requestId === 'same-3' && l.msg === 'incoming request');
          assert.deepEqual(seen.map((l) => (l.req as { remoteAddress: string }).remoteAddress), ['203.0.113.8', '203.0.113.8']);
        }
      }
    });

    test('while the service shuts down, both lanes answer 503 with Retry-After and close the connection', async (t) => {
      // The standard list, its first rule switched by the test rather than by the server's close.
      let closing = false;
      const api = await buildTestApp(t, { backend, transport: 'http', items: PETS, rules: (standard) => [shuttingDown(() => closing), ...standard.slice(1)] });
      closing = true;
      for (const req of [{ method: 'GET', url: '/v1/inventory', key: api.keys.read, headers: { 'x-request-id': 'same-1' } }, patchOf(api, '1', '{"quantity":5}'), adjustOf(api, '1', '{"delta":1}')]) {
        const { lane, full } = await bothLanes(api, req);
        assert.deepEqual(lane, full, `${req.method} ${req.url}`);
        assertErrorAnswer(lane, 503, 'service_unavailable');
        assert.equal(lane.headers['retry-after'], '1');
      }
      const raw = await overSocketRaw(api, 'GET', '/v1/inventory', { authorization: `Bearer ${api.keys.read}` });
      assert.equal(raw.connection, 'close', 'the client is told to go elsewhere');
    });

    test('a key the store cannot look up right now is refused 503, never let through (the lane hands it to Fastify)', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PETS, wrapStore: (store) => failingOn(store, 'findApiKeyByHash', new StoreUnavailableError('down')) });
      const before = api.app.fastLane.answered;
      const lane = await overSocket(api, 'GET', '/v1/inventory', { authorization: `Bearer ${api.keys.read}`, 'x-request-id': 'same-1' }, undefined);
      assert.equal(api.app.fastLane.answered, before, 'the lane could not decide it');
      assertErrorAnswer(lane, 503, 'service_unavailable');
      const full = await api.app.inject({ method: 'GET', url: '/v1/inventory', headers: { authorization: `Bearer ${api.keys.read}`, 'x-request-id': 'same-1' } });
      assert.deepEqual(lane, answerOf(full.statusCode, full.headers, full.rawPayload));
    });

    test('a rule added to the pipeline applies identically in both lanes: its header on every answer, and its refusal', async (t) => {
      // After authentication, as a per-key rule would be.
      const probe = memoryRule('probe', (ctx) => {
        ctx.answerHeaders['x-probe'] = ctx.principal ? `seen ${ctx.principal.keyName}` : 'seen';
        // Headers an answer may carry itself: Vary is merged, anything else stays the answer's.
        ctx.answerHeaders.vary = 'Origin';
        ctx.answerHeaders['retry-after'] = '99';
        return ctx.headers['x-probe-refuse'] === 'yes' ? new ApiError('rate_limited', 'Refused by the probe rule.', { 'retry-after': '7' }) : undefined;
      });
      const api = await buildTestApp(t, { backend, transport: 'http', items: PETS, rules: (standard) => afterAuthentication(standard, probe) });
      const get: Sent = { method: 'GET', url: '/v1/inventory', key: api.keys.read, headers: { 'x-request-id': 'same-1' } };
      for (const req of [get, patchOf(api, '1', '{"quantity":5}', { 'if-match': '"v999"' }), patchOf(api, '1', '{"quantity":-1}')]) {
        const { lane, full } = await bothLanes(api, req);
        assert.deepEqual(lane, full, `${req.method} ${req.url}`);
        assert.equal(lane.headers['x-probe'], req.method === 'GET' ? 'seen test inventory:read' : 'seen test inventory:write');
        assert.equal(lane.headers.vary, req.method === 'GET' ? 'Accept-Encoding, Origin' : 'Origin');
        assert.equal(lane.headers['retry-after'], '99');
      }
      for (const req of [get, patchOf(api, '1', '{"quantity":5}')]) {
        const refused = { ...req, headers: { ...req.headers, 'x-probe-refuse': 'yes' } };
        const { lane, full } = await bothLanes(api, refused);
        assert.deepEqual(lane, full, `${req.method} ${req.url}`);
        assertErrorAnswer(lane, 429, 'rate_limited');
        assert.equal(lane.headers['retry-after'], '7', "the refusal's own Retry-After, once");
      }
      // The rule runs for every route, the ones only Fastify serves included, and its header goes on refusals by earlier rules too.
      const history = await api.request({ method: 'GET', url: '/v1/inventory/1/history', key: api.keys.read });
      assert.equal(history.headers['x-probe'], 'seen test inventory:read');
      const unauthenticated = await api.request({ method: 'GET', url: '/v1/inventory/1/history' });
      assertError(unauthenticated, 401, 'unauthorized');
    });

    test('security headers on every answer of both lanes, successes and refusals alike (decisions 6.1)', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PETS });
      const cases: Sent[] = [
        { method: 'GET', url: '/v1/inventory', key: api.keys.read, headers: { 'x-request-id': 'same-1' } },
        { method: 'GET', url: '/v1/inventory', headers: { 'x-request-id': 'same-1' } },
        patchOf(api, '1', '{"quantity":-1}'),
        adjustOf(api, '1', '{"delta":0}'),
      ];
      for (const req of cases) {
        const { lane, full } = await bothLanes(api, req);
        assert.deepEqual(lane, full, `${req.method} ${req.url}`);
        for (const [name, value] of [...SECURITY_HEADERS, ['x-content-type-options', 'nosniff'], ['content-security-policy', JSON_CONTENT_SECURITY_POLICY]]) {
          assert.equal(lane.headers[name], value, `${name} on ${req.method} ${req.url}`);
        }
      }
    });

    test('CORS: answers to an allowed origin carry its headers in both lanes, refusals included; another origin gets none', async (t) => {
      const allowed = 'https://shop.example';
      const api = await buildTestApp(t, { backend, transport: 'http', items: PETS, config: { CORS_ORIGINS: `${allowed}, http://localhost:3000` } });
      const from = (origin: string | undefined, req: Sent): Sent => ({ ...req, headers: { ...req.headers, ...(origin && { origin }) } });
      const get: Sent = { method: 'GET', url: '/v1/inventory', key: api.keys.read, headers: { 'x-request-id': 'same-1' } };
      const cases: Sent[] = [get, { ...get, key: undefined }, patchOf(api, '1', '{"quantity":5}', { 'if-match': '"v999"' }), { ...patchOf(api, '1', '{"quantity":5}'), key: api.keys.read }];
      for (const req of cases) {
        const { lane, full } = await bothLanes(api, from(allowed, req));
        assert.deepEqual(lane, full, `${req.method} ${req.url}`);
        assert.equal(lane.headers['access-control-allow-origin'], allowed);
        assert.equal(lane.headers['access-control-expose-headers'], CORS_EXPOSE_HEADERS);
        assert.match(String(lane.headers.vary), /(^|, )Origin$/);
        for (const name of ['ETag', 'RateLimit', 'RateLimit-Policy', 'Retry-After', 'X-Request-Id', 'Idempotent-Replayed', 'WWW-Authenticate']) {
          assert.ok(CORS_EXPOSE_HEADERS.split(', ').includes(name), name);
        }
        for (const origin of ['https://evil.example', 'https://shop.example.evil', 'null', undefined]) {
          const other = await bothLanes(api, from(origin, req));
          assert.deepEqual(other.lane, other.full, `${String(origin)} ${req.method} ${req.url}`);
          assert.equal(other.lane.headers['access-control-allow-origin'], undefined, String(origin));
          assert.equal(other.lane.headers['access-control-expose-headers'], undefined, String(origin));
          assert.match(String(other.lane.headers.vary), /(^|, )Origin$/, 'caches keep origins apart');
        }
      }
      // The failed-authentication throttle's 429 (a rule after CORS) still tells the browser app why.
      const strict = await buildTestApp(t, { backend, transport: 'http', items: PETS, config: { CORS_ORIGINS: allowed, AUTH_FAILURES_PER_MINUTE: '1' } });
      const failed = await overSocket(strict, 'GET', '/v1/inventory', { authorization: `Bearer ${strict.keys.read}x`, origin: allowed }, undefined);
      assertErrorAnswer(failed, 401, 'unauthorized');
      assert.equal(failed.headers['access-control-allow-origin'], allowed);
      const throttled = await bothLanes(strict, from(allowed, { ...get, key: strict.keys.read }));
      assertErrorAnswer(throttled.lane, 429, 'rate_limited');
      assertErrorAnswer(throttled.full, 429, 'rate_limited');
      assert.equal(throttled.lane.headers['access-control-allow-origin'], allowed);
      assert.equal(throttled.full.headers['access-control-allow-origin'], allowed);
    });

    test('log lines: the lane writes the fields Fastify writes for a request', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PETS });
      const get = (id: string) => overSocket(api, 'GET', '/v1/inventory', { authorization: `Bearer ${api.keys.read}`, 'x-request-id': id }, undefined);
      // A key's first use is not in the cache yet: Fastify answers it; the second is the lane's.
      await get('full-1');
      const before = api.app.fastLane.answered;
      await get('lane-1');
      assert.equal(api.app.fastLane.answered, before + 1);
      const shape = (requestId: string, msg: string) => {
        const lines = api.logs().filter((l) => l.requestId === requestId && l.msg === msg);
        assert.equal(lines.length, 1, `${requestId}: ${msg}`);
        const line = lines[0]!;
        return [...Object.keys(line), ...Object.keys((line.req ?? line.res) as object), typeof line.responseTime].sort();
      };
      for (const msg of ['incoming request', 'request completed']) assert.deepEqual(shape('lane-1', msg), shape('full-1', msg), msg);
    });
  });
}
