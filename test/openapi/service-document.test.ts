import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { ERROR_CATALOGUE, ERROR_CODES, StoreUnavailableError } from '../../src/errors.js';
import { readFile } from 'node:fs/promises';
import { PET_ID_INT64_NOTE, petIdDescription, type InventoryItem } from '../../src/schemas/inventory.js';
import { assertError, buildTestApp, failingOn, makeKey } from '../support/app.js';
import type { OpenApiDoc } from '../support/contract.js';
import { StreamClient } from '../support/event-stream.js';

const PETS: InventoryItem[] = [{ petId: 1n, quantity: 5, status: 'available' }];

async function documentOf(t: Parameters<typeof buildTestApp>[0], config = {}) {
  const api = await buildTestApp(t, { config });
  const res = await api.request({ method: 'GET', url: '/v1/openapi.json' });
  assert.equal(res.status, 200);
  return res.json<OpenApiDoc>();
}

/** The value at a path of keys inside a parsed document. */
function dig(value: unknown, ...path: string[]): unknown {
  return path.reduce<unknown>((node, key) => (node as Record<string, unknown> | undefined)?.[key], value);
}

test('GET /v1/openapi.json is a valid OpenAPI 3.1 document, served without a key (decisions 1.3)', async (t) => {
  const doc = await documentOf(t);
  assert.equal(doc.openapi, '3.1.0');
  const result = await new Validator().validate(doc);
  assert.equal(result.valid, true, JSON.stringify(result.errors));
});

test('servers hold the production and staging base URLs from configuration, both ending in /v1', async (t) => {
  const doc = await documentOf(t, { PUBLIC_BASE_URL: 'https://inventory.example.com/v1', STAGING_BASE_URL: 'https://staging.inventory.example.com/v1' });
  assert.deepEqual(
    doc.servers.map((s) => s.url),
    ['https://inventory.example.com/v1', 'https://staging.inventory.example.com/v1'],
  );
});

test('with no base URL configured, servers is the relative /v1: the host that served the document', async (t) => {
  const doc = await documentOf(t);
  assert.deepEqual(doc.servers, [{ url: '/v1', description: 'The service that serves this document' }]);
  const staging = await documentOf(t, { STAGING_BASE_URL: 'https://staging.inventory.example.com/v1' });
  assert.deepEqual(staging.servers.map((s) => s.url), ['https://staging.inventory.example.com/v1'], 'only what is configured');
});

test('info has contact and license; it warns that petIds are int64 and tables every error code', async (t) => {
  const doc = await documentOf(t);
  assert.ok(dig(doc, 'info', 'contact', 'name'));
  assert.ok(dig(doc, 'info', 'license', 'name'));
  const description = String(dig(doc, 'info', 'description'));
  assert.ok(description.includes(PET_ID_INT64_NOTE));
  for (const code of ERROR_CODES) assert.ok(description.includes(`| \`${code}\` | ${ERROR_CATALOGUE[code].status} |`), `${code} in the table`);
});

test('every petId, in paths and in bodies, is an int64 whose description says to parse it losslessly (a query\'s is its digits as text)', async (t) => {
  const text = JSON.stringify(await documentOf(t));
  const petIds: Record<string, unknown>[] = [];
  JSON.parse(text, function (this: Record<string, unknown>, key, value: unknown) {
    if (key === 'petId' && typeof value === 'object' && value !== null) petIds.push(value as Record<string, unknown>);
    // A query's value is text: a filter by pet (GET /v1/reservations) takes the digits, kept exact as a string.
    if (this.name === 'petId' && this.in !== 'query' && key === 'schema') petIds.push({ ...(value as object), description: this.description });
    return value;
  });
  assert.ok(petIds.length >= 4, `path parameters and body properties: ${petIds.length}`);
  for (const p of petIds) {
    assert.equal(p.type, 'integer');
    assert.equal(p.format, 'int64');
    assert.ok(String(p.description).endsWith(PET_ID_INT64_NOTE), String(p.description));
  }
});

test('the committed openapi.json is the document served under the defaults (`npm run openapi` rewrites it)', async (t) => {
  const served = await documentOf(t);
  const committed: unknown = JSON.parse(await readFile(new URL('../../openapi.json', import.meta.url), 'utf8'));
  assert.deepEqual(served, committed, 'openapi.json is stale: run `npm run openapi` and commit the result');
});

test('the two operations are described exactly as the spec has them', async (t) => {
  const doc = await documentOf(t);
  const list = doc.paths['/inventory']!.get!;
  const update = doc.paths['/inventory/{petId}']!.patch!;
  assert.equal(list.operationId, 'listInventory');
  assert.equal(update.operationId, 'updateInventory');
  assert.equal(update['x-experimental'], true, 'decisions 1.3, 8.1');
  assert.equal(list['x-experimental'], undefined);
  const [petId, ...extensionParameters] = update.parameters as Record<string, unknown>[];
  assert.deepEqual(petId, { name: 'petId', in: 'path', required: true, description: petIdDescription('The ID of the pet whose stock is updated'), schema: { type: 'integer', format: 'int64' } });
  // Headers the integrity extensions read: optional, so the spec's clients send none of them.
  assert.deepEqual(extensionParameters.map((p) => [p.name, p.in, p.required, p['x-extension']]), [
    ['If-Match', 'header', false, true],
    ['Idempotency-Key', 'header', false, true],
  ]);
  assert.equal(dig(doc.components.schemas, 'InventoryUpdate', 'properties', 'reason', 'x-extension'), true);
  for (const op of [doc.paths['/inventory/{petId}']!.get!, doc.paths['/inventory/{petId}/history']!.get!]) {
    assert.equal(op['x-extension'], true, `${op.operationId} is an extension (decisions 1.2)`);
  }
  const body = update.requestBody as { required: boolean; content: Record<string, { schema: unknown }> };
  assert.equal(body.required, true);
  assert.deepEqual(Object.keys(body.content), ['application/json', 'application/merge-patch+json']);
  const schemas = doc.components.schemas;
  // What reservations hold is an extension: present in every answer, required by no client of the contract (decisions 12.2).
  assert.deepEqual(dig(schemas, 'InventoryItem', 'required'), ['petId', 'quantity', 'status']);
  for (const field of ['reserved', 'available']) assert.equal(dig(schemas, 'InventoryItem', 'properties', field, 'x-extension'), true, field);
  assert.deepEqual(dig(schemas, 'InventoryItem', 'properties', 'petId'), { type: 'integer', format: 'int64', description: petIdDescription('Identifier of the animal this entry tracks') });
  assert.deepEqual(dig(schemas, 'InventoryItem', 'properties', 'status'), { $ref: '#/components/schemas/PetStatus' });
  assert.deepEqual(dig(schemas, 'PetStatus', 'enum'), ['available', 'pending', 'sold']);
  assert.deepEqual(dig(schemas, 'InventoryUpdate', 'required'), ['quantity']);
  assert.deepEqual(dig(schemas, 'Error', 'required'), ['code', 'message', 'status']);
  assert.equal(dig(doc, 'components', 'securitySchemes', 'bearerAuth', 'type'), 'http');
  assert.equal(dig(doc, 'components', 'securitySchemes', 'bearerAuth', 'scheme'), 'bearer');
  assert.deepEqual(doc.security, [{ bearerAuth: [] }]);
  assert.deepEqual(doc.paths['/openapi.json']!.get!.security, []);
});

test('the Error code enum is the closed catalogue (decisions 4.2)', async (t) => {
  const doc = await documentOf(t);
  const codes = dig(doc.components.schemas, 'Error', 'properties', 'code', 'enum') as typeof ERROR_CODES;
  assert.deepEqual(codes, ERROR_CODES);
  for (const code of ['unauthorized', 'forbidden', 'not_found', 'invalid_pet_id', 'invalid_quantity', 'missing_field', 'unknown_field', 'invalid_body', 'malformed_json', 'invalid_parameter', 'unsupported_media_type', 'payload_too_large', 'method_not_allowed', 'rate_limited', 'service_unavailable', 'internal_error']) {
    assert.ok((codes as string[]).includes(code), code);
  }
});

test('the spec statuses are plain; every other status is marked x-extension (decisions 1.2)', async (t) => {
  const doc = await documentOf(t);
  const responses = (path: string, method: string) => doc.paths[path]![method]!.responses as Record<string, Record<string, unknown>>;
  const plain = (r: Record<string, Record<string, unknown>>) => Object.keys(r).filter((s) => !r[s]!['x-extension']);
  assert.deepEqual(plain(responses('/inventory', 'get')), ['200', '401']);
  assert.deepEqual(plain(responses('/inventory/{petId}', 'patch')), ['200', '400', '401', '404']);
  assert.equal(responses('/inventory/{petId}', 'patch')['403']!['x-extension'], true);
  for (const [status, response] of Object.entries(responses('/inventory/{petId}', 'patch'))) {
    const schema = JSON.stringify(response.content);
    if (Number(status) >= 400) assert.match(schema, /"status":\{"const":\d+\}/, status);
  }
});

test('every documented response of both operations is reachable and matches the document', async (t) => {
  const api = await buildTestApp(t, { items: PETS, config: { BODY_LIMIT: '64', AUTH_FAILURES_PER_MINUTE: '2' } });
  const patch = (url: string, body: string, headers: Record<string, string> = {}, key = api.keys.write) =>
    api.request({ method: 'PATCH', url, key, headers: { 'content-type': 'application/json', ...headers }, body });
  const list = await api.request({ method: 'GET', url: '/v1/inventory', key: api.keys.read });
  await api.request({ method: 'GET', url: '/v1/inventory', key: api.keys.read, headers: { 'if-none-match': String(list.headers.etag) } });
  await api.request({ method: 'GET', url: '/v1/inventory?x=1', key: api.keys.read });
  await patch('/v1/inventory/1', '{"quantity":1}');
  await patch('/v1/inventory/x', '{"quantity":1}');
  await patch('/v1/inventory/2', '{"quantity":1}');
  await patch('/v1/inventory/1', '{"quantity":1}', {}, api.keys.read);
  await patch('/v1/inventory/1', '{"quantity":1}', { 'content-type': 'text/plain' });
  await patch('/v1/inventory/1', `{"quantity":1}${' '.repeat(80)}`);
  await api.request({ method: 'GET', url: '/v1/openapi.json' });
  // The integrity extensions: item reads, conditional and idempotent updates, history.
  const item = await api.request({ method: 'GET', url: '/v1/inventory/1', key: api.keys.read });
  await api.request({ method: 'GET', url: '/v1/inventory/1', key: api.keys.read, headers: { 'if-none-match': String(item.headers.etag) } });
  await api.request({ method: 'GET', url: '/v1/inventory/2', key: api.keys.read });
  await api.request({ method: 'GET', url: '/v1/inventory/x', key: api.keys.read });
  await patch('/v1/inventory/1', '{"quantity":1}', { 'if-match': '"v999"' });
  await patch('/v1/inventory/1', '{"quantity":1}', { 'idempotency-key': 'k1' });
  await patch('/v1/inventory/1', '{"quantity":2}', { 'idempotency-key': 'k1' });
  await api.request({ method: 'GET', url: '/v1/inventory/1/history', key: api.keys.read });
  await api.request({ method: 'GET', url: '/v1/inventory/1/history?limit=0', key: api.keys.read });
  await api.request({ method: 'GET', url: '/v1/inventory/2/history', key: api.keys.read });
  // Adjustments and batches (decisions 5.11, 5.12): every outcome but the ones of a broken store and of authentication.
  // Pet 1 holds 1 here: +1 applies, -99 is short.
  const post = (url: string, body: string, headers: Record<string, string> = {}, key = api.keys.write) =>
    api.request({ method: 'POST', url, key, headers: { 'content-type': 'application/json', ...headers }, body });
  const adjustments = {
    url: '/v1/inventory/1/adjustments',
    body: (change: string) => change,
    stale: { body: '{"delta":-1}', headers: { 'if-match': '"v999"' } },
    missing: { url: '/v1/inventory/2/adjustments', body: '{"delta":-1}' },
    pad: 80,
  };
  const batches = {
    url: '/v1/inventory/batch',
    body: (change: string) => `{"changes":[{"petId":1,${change.slice(1, -1)}}]}`,
    stale: { body: '{"changes":[{"petId":1,"delta":-1,"ifMatch":"\\"v999\\""}]}', headers: {} },
    missing: { url: '/v1/inventory/batch', body: '{"changes":[{"petId":2,"delta":-1}]}' },
    pad: 260_000,
  };
  for (const op of [adjustments, batches]) {
    await post(op.url, op.body('{"delta":1}'));
    await post(op.url, op.body('{"delta":-99}'));
    await post(op.url, op.body('{"delta":0}'));
    await post(op.missing.url, op.missing.body);
    await post(op.url, op.stale.body, op.stale.headers);
    await post(op.url, op.body('{"delta":1}'), {}, api.keys.read);
    await post(op.url, op.body('{"delta":1}'), { 'content-type': 'text/plain' });
    await post(op.url, op.body(`{"delta":1,"pad":"${'x'.repeat(op.pad)}"}`));
    await post(op.url, op.body('{"delta":1}'), { 'idempotency-key': `k-${op.url}` });
    await post(op.url, op.body('{"delta":2}'), { 'idempotency-key': `k-${op.url}` });
  }
  // The change events: the feed, its refusals, a pruned position; the stream's refusal and, over a socket, the stream itself.
  await api.request({ method: 'GET', url: '/v1/events?after=0&limit=5', key: api.keys.read });
  await api.request({ method: 'GET', url: '/v1/events?limit=0', key: api.keys.read });
  await api.request({ method: 'GET', url: '/v1/events?after=9007199254740991', key: api.keys.read });
  await api.request({ method: 'GET', url: '/v1/events/stream?after=x', key: api.keys.read });
  const events = await buildTestApp(t, { items: PETS, transport: 'http' });
  await events.request({ method: 'PATCH', url: '/v1/inventory/1', key: events.keys.write, headers: { 'content-type': 'application/json' }, body: '{"quantity":1}' });
  const live = await new StreamClient(events.baseUrl, { key: events.keys.read }).opened();
  events.contract.check('GET', '/v1/events/stream', live.status, live.headers, '');
  live.close();
  await events.store.events.purgeEvents(new Date(Date.now() + 60_000));
  await events.request({ method: 'GET', url: '/v1/events?after=0', key: events.keys.read });
  const strict = await buildTestApp(t, { items: PETS, config: { REQUIRE_IF_MATCH: 'true' } });
  await strict.request({ method: 'PATCH', url: '/v1/inventory/1', key: strict.keys.write, headers: { 'content-type': 'application/json' }, body: '{"quantity":1}' });
  for (const url of ['/v1/inventory/1', '/v1/inventory/1/history', '/v1/events', '/v1/events/stream']) await strict.request({ method: 'GET', url, key: 'nope' });
  for (const url of ['/v1/inventory/1/adjustments', '/v1/inventory/batch']) await strict.request({ method: 'POST', url, key: 'nope', body: '{}' });
  await api.request({ method: 'GET', url: '/v1/openapi.json?x=1' });
  // Two failures (the limit) get 401; after that the address is throttled: 429 on both.
  await patch('/v1/inventory/1', '{"quantity":1}', {}, 'nope');
  await api.request({ method: 'GET', url: '/v1/inventory', key: 'nope' });
  await api.request({ method: 'GET', url: '/v1/inventory', key: api.keys.read });
  for (const url of ['/v1/inventory/1', '/v1/inventory/1/history', '/v1/events', '/v1/events/stream']) await api.request({ method: 'GET', url, key: api.keys.read });
  await patch('/v1/inventory/1', '{"quantity":1}');
  await post('/v1/inventory/1/adjustments', '{"delta":-1}');
  await post('/v1/inventory/batch', '{"changes":[{"petId":1,"delta":-1}]}');

  const failing = await buildTestApp(t, {
    items: PETS,
    wrapStore: (s) =>
      failingOn(
        failingOn(failingOn(failingOn(failingOn(failingOn(failingOn(s, 'applyBatch', new Error('boom')), 'changesSince', new Error('boom')), 'applyChange', new StoreUnavailableError('down')), 'getEntry', new Error('boom')), 'listHistory', new StoreUnavailableError('down')), 'readEvents', new Error('boom')),
        'head',
        new StoreUnavailableError('down'),
      ),
  });
  assertError(await failing.request({ method: 'GET', url: '/v1/inventory', key: failing.keys.read }), 500, 'internal_error');
  assertError(
    await failing.request({ method: 'PATCH', url: '/v1/inventory/1', key: failing.keys.write, headers: { 'content-type': 'application/json' }, body: '{"quantity":1}' }),
    503,
    'service_unavailable',
  );
  const broken = await buildTestApp(t, {
    items: PETS,
    wrapStore: (s) =>
      failingOn(
        failingOn(failingOn(failingOn(failingOn(failingOn(failingOn(s, 'applyBatch', new StoreUnavailableError('down')), 'applyChange', new Error('boom')), 'changesSince', new StoreUnavailableError('down')), 'getEntry', new StoreUnavailableError('down')), 'listHistory', new Error('boom')), 'readEvents', new StoreUnavailableError('down')),
        'head',
        new Error('boom'),
      ),
  });
  await broken.request({ method: 'GET', url: '/v1/inventory', key: broken.keys.read });
  await broken.request({ method: 'PATCH', url: '/v1/inventory/1', key: broken.keys.write, headers: { 'content-type': 'application/json' }, body: '{"quantity":1}' });

  for (const app of [failing, broken]) {
    for (const url of ['/v1/inventory/1', '/v1/inventory/1/history', '/v1/events', '/v1/events/stream']) await app.request({ method: 'GET', url, key: app.keys.read });
    const write = { key: app.keys.write, headers: { 'content-type': 'application/json' } };
    await app.request({ method: 'POST', url: '/v1/inventory/1/adjustments', ...write, body: '{"delta":-1}' });
    await app.request({ method: 'POST', url: '/v1/inventory/batch', ...write, body: '{"changes":[{"petId":1,"delta":-1}]}' });
  }
  // The calling key: its statuses come from authentication, which the operation needs alone.
  const keys = await buildTestApp(t, { config: { RATE_LIMIT_PER_MINUTE: '3' } });
  await keys.request({ method: 'GET', url: '/v1/key', key: keys.keys.read });
  await keys.request({ method: 'GET', url: '/v1/key?x=1', key: keys.keys.read });
  await keys.request({ method: 'GET', url: '/v1/key', key: 'nope' });
  for (let i = 0; i < 2; i++) await keys.request({ method: 'GET', url: '/v1/key', key: keys.keys.read });
  const lookupBroken = await buildTestApp(t, { wrapStore: (s) => failingOn(s, 'findApiKeyByHash', new Error('boom')) });
  const lookupDown = await buildTestApp(t, { wrapStore: (s) => failingOn(s, 'findApiKeyByHash', new StoreUnavailableError('down')) });
  for (const app of [lookupBroken, lookupDown]) await app.request({ method: 'GET', url: '/v1/key', key: app.keys.read });
  // The webhook endpoints: a key with webhooks:manage, one without, its rate limit, and a store that fails.
  const hooks = await buildTestApp(t, { config: { RATE_LIMIT_PER_MINUTE: '3' } });
  const manage = await makeKey(hooks.store, hooks.config.environment, ['webhooks:manage']);
  await hooks.request({ method: 'GET', url: '/v1/webhooks', key: manage });
  await hooks.request({ method: 'GET', url: '/v1/webhooks?x=1', key: manage });
  await hooks.request({ method: 'GET', url: '/v1/webhooks', key: 'nope' });
  await hooks.request({ method: 'GET', url: '/v1/webhooks', key: hooks.keys.read });
  for (let i = 0; i < 2; i++) await hooks.request({ method: 'GET', url: '/v1/webhooks', key: manage });
  const hooksBroken = await buildTestApp(t, { wrapStore: (s) => failingOn(s, 'listEndpoints', new Error('boom')) });
  const hooksDown = await buildTestApp(t, { wrapStore: (s) => failingOn(s, 'listEndpoints', new StoreUnavailableError('down')) });
  for (const app of [hooksBroken, hooksDown]) {
    await app.request({ method: 'GET', url: '/v1/webhooks', key: await makeKey(app.store, app.config.environment, ['webhooks:manage']) });
  }
  // Reservations (decisions 12): every outcome, on a key with the scope, one without, its rate limit, and a store that fails.
  const held = await buildTestApp(t, { items: PETS, config: { RATE_LIMIT_PER_MINUTE: '40' } });
  const reserve = (app: typeof held, body: string, key = app.keys.write, headers: Record<string, string> = {}) =>
    app.request({ method: 'POST', url: '/v1/reservations', key, headers: { 'content-type': 'application/json', ...headers }, body });
  const made = (await reserve(held, '{"items":[{"petId":1,"quantity":1}]}')).json<{ id: string }>().id;
  const other = (await reserve(held, '{"items":[{"petId":1,"quantity":1}]}')).json<{ id: string }>().id;
  await reserve(held, '{"items":[{"petId":1,"quantity":99}]}');
  await reserve(held, '{"items":[{"petId":2,"quantity":1}]}');
  await reserve(held, '{"items":[{"petId":1,"quantity":0}]}');
  await reserve(held, '{"items":[{"petId":1,"quantity":1}]}', held.keys.read);
  await reserve(held, '{"items":[{"petId":1,"quantity":1}]}', 'nope');
  await reserve(held, '{"items":[{"petId":1,"quantity":1}]}', held.keys.write, { 'content-type': 'text/plain' });
  await reserve(held, `{"items":[{"petId":1,"quantity":1}],"reference":"${'x'.repeat(20_000)}"}`);
  await reserve(held, '{"items":[{"petId":1,"quantity":1}]}', held.keys.write, { 'idempotency-key': 'r1' });
  await reserve(held, '{"items":[{"petId":1,"quantity":2}]}', held.keys.write, { 'idempotency-key': 'r1' });
  for (const [method, url] of [
    ['GET', '/v1/reservations'],
    ['GET', `/v1/reservations/${made}`],
    ['POST', `/v1/reservations/${made}/commit`],
    ['POST', `/v1/reservations/${other}/release`],
  ] as const) {
    await held.request({ method, url, key: held.keys.write });
    await held.request({ method, url: `${url}?x=1`, key: held.keys.write });
    await held.request({ method, url, key: held.keys.read });
    await held.request({ method, url, key: 'nope' });
  }
  for (const url of ['/v1/reservations/res_000000000000000000000000', '/v1/reservations/res_000000000000000000000000/commit', '/v1/reservations/res_000000000000000000000000/release']) {
    await held.request({ method: url.endsWith('0') ? 'GET' : 'POST', url, key: held.keys.write });
  }
  await held.request({ method: 'POST', url: `/v1/reservations/${made}/release`, key: held.keys.write });
  await held.request({ method: 'POST', url: `/v1/reservations/${other}/commit`, key: held.keys.write });
  for (let i = 0; i < 40; i++) {
    for (const [method, url] of [['GET', '/v1/reservations'], ['GET', `/v1/reservations/${made}`], ['POST', `/v1/reservations/${made}/commit`], ['POST', `/v1/reservations/${other}/release`], ['POST', '/v1/reservations']] as const) {
      await held.request({ method, url, key: held.keys.write, ...(url === '/v1/reservations' && method === 'POST' ? { headers: { 'content-type': 'application/json' }, body: '{"items":[{"petId":1,"quantity":1}]}' } : {}) });
    }
  }
  const reservationsFailing: (typeof held)[] = [];
  for (const error of [new Error('boom'), new StoreUnavailableError('down')]) {
    const app = await buildTestApp(t, {
      items: PETS,
      wrapStore: (s) => failingOn(failingOn(failingOn(failingOn(s, 'create', error), 'get', error), 'list', error), 'end', error),
    });
    await reserve(app, '{"items":[{"petId":1,"quantity":1}]}');
    await app.request({ method: 'GET', url: '/v1/reservations', key: app.keys.write });
    await app.request({ method: 'GET', url: `/v1/reservations/${made}`, key: app.keys.write });
    for (const how of ['commit', 'release']) await app.request({ method: 'POST', url: `/v1/reservations/${made}/${how}`, key: app.keys.write });
    reservationsFailing.push(app);
  }
  const seen = new Set(
    [api, strict, events, failing, broken, keys, lookupBroken, lookupDown, hooks, hooksBroken, hooksDown, held, ...reservationsFailing].flatMap((app) => [...app.contract.seen]),
  );
  const doc = await documentOf(t);
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const op of Object.values(ops)) {
      if (!op || op.operationId === 'getOpenApiDocument') continue;
      for (const status of Object.keys(op.responses)) {
        assert.ok(seen.has(`${op.operationId} ${status}`), `${op.operationId} (${path}) ${status} was never produced`);
      }
    }
  }
  assert.ok(seen.has('getOpenApiDocument 200') && seen.has('getOpenApiDocument 400'));
});

/** One place the document names an error code with a status. */
interface CodeMention {
  code: string;
  status: number;
  where: string;
}

/**
 * Every place the document names an error code with a status: each row of the error table in
 * info, and, in each operation's responses, the code enum (or const) of an Error body under its
 * status, that body's status const, and any example body's code and status.
 */
function codeMentions(doc: OpenApiDoc): CodeMention[] {
  const mentions: CodeMention[] = [];
  for (const [, code, status] of String(dig(doc, 'info', 'description')).matchAll(/^\| `([^`]+)` \| (\d+) \|/gm)) {
    mentions.push({ code: code!, status: Number(status), where: 'the error table in info.description' });
  }
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(item)) {
      for (const [key, response] of Object.entries(operation?.responses ?? {})) {
        const where = `${method.toUpperCase()} ${path} ${key}`;
        const add = (code: unknown, status: number, what: string) => mentions.push({ code: String(code), status, where: `${where} (${what})` });
        const visit = (node: unknown): void => {
          if (Array.isArray(node)) return node.forEach(visit);
          if (node === null || typeof node !== 'object') return;
          const codeSchema = dig(node, 'properties', 'code') as { enum?: unknown[]; const?: unknown } | undefined;
          if (codeSchema && typeof codeSchema === 'object') {
            const codes = [...(codeSchema.enum ?? []), ...(codeSchema.const === undefined ? [] : [codeSchema.const])];
            const statusConst = dig(node, 'properties', 'status', 'const');
            for (const code of codes) {
              add(code, Number(key), 'code enum');
              if (statusConst !== undefined) add(code, Number(statusConst), 'status const');
            }
          }
          const body = node as { code?: unknown; status?: unknown };
          if (typeof body.code === 'string' && 'status' in body) {
            add(body.code, Number(key), 'example');
            add(body.code, Number(body.status), 'example status');
          }
          Object.values(node).forEach(visit);
        };
        visit(response);
      }
    }
  }
  return mentions;
}

test('each error code has one status, used wherever the code appears', async (t) => {
  const mentions = codeMentions(await documentOf(t));
  assert.ok(mentions.some((m) => !m.where.startsWith('the error table')), 'the responses name their error codes');
  for (const m of mentions) assert.ok((ERROR_CODES as string[]).includes(m.code), `${m.code} at ${m.where} is not in the catalogue`);
  for (const code of ERROR_CODES) {
    const status = ERROR_CATALOGUE[code].status;
    const own = mentions.filter((m) => m.code === code);
    for (const m of own) assert.equal(m.status, status, `${code} under ${m.status} at ${m.where}: the catalogue says ${status}`);
    assert.deepEqual([...new Set(own.map((m) => m.status))], [status], `${code} appears under exactly one status`);
  }
});
