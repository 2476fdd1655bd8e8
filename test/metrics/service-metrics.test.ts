import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { describe, test } from 'node:test';
import { startMetricsServer } from '../../src/metrics/server.js';
import { OPERATION_LABELS, ServiceMetrics } from '../../src/metrics/service-metrics.js';
import type { InventoryItem } from '../../src/schemas/inventory.js';
import { BACKENDS, backendSkip } from '../support/backends.js';
import { assertError, buildTestApp, type TestApp } from '../support/app.js';
import { StreamClient } from '../support/event-stream.js';
import { sample } from '../support/prometheus.js';

const PETS: InventoryItem[] = Array.from({ length: 5 }, (_, i) => ({ petId: BigInt(i + 1), quantity: i, status: 'available' }));

/** One request over a socket of its own (the fast lane takes the hot ones). */
function overSocket(baseUrl: string, method: string, path: string, headers: Record<string, string>, body?: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const framed = body === undefined ? headers : { 'content-length': String(Buffer.byteLength(body)), 'content-type': 'application/json', ...headers };
    const req = httpRequest(`${baseUrl}${path}`, { method, headers: framed, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function keyIds(api: TestApp): Promise<string[]> {
  return (await api.store.keys.listApiKeys()).map((k) => k.id);
}

for (const backend of BACKENDS) {
  const skip = await backendSkip(backend);
  describe(`metrics on ${backend}`, { skip }, () => {
    test('requests of both lanes by operation and status, durations, store calls, batches, list reads, entries, refusals; never a key or a raw path', async (t) => {
      const metrics = new ServiceMetrics();
      const api = await buildTestApp(t, { backend, transport: 'http', items: PETS, metrics, config: { AUTH_FAILURES_PER_MINUTE: '2' } });
      const read = { authorization: `Bearer ${api.keys.read}` };
      const write = { authorization: `Bearer ${api.keys.write}` };
      const lane = api.app.fastLane.answered;
      // The first use of a key is Fastify's, and so is any use after its cached lookup aged (KEY_CACHE_TTL_MS), which a
      // loaded machine can take between two requests: GETs go on until the lane has answered two, so both lanes count.
      let lists = 0;
      while (lists < 3 || api.app.fastLane.answered - lane < 2) {
        assert.equal(await overSocket(api.baseUrl, 'GET', '/v1/inventory', read), 200);
        lists++;
        assert.ok(lists < 100, 'the lane answers a GET of a key it has just looked up');
      }
      assert.equal(await overSocket(api.baseUrl, 'PATCH', '/v1/inventory/1', write, '{"quantity":7}'), 200);
      assert.equal(await overSocket(api.baseUrl, 'PATCH', '/v1/inventory/1', write, '{"quantity":8}'), 200);
      assert.equal(await overSocket(api.baseUrl, 'GET', '/v1/inventory/2', read), 200);
      assert.equal(await overSocket(api.baseUrl, 'GET', '/secret-path-s3cr3t', read), 404);
      assert.equal(await overSocket(api.baseUrl, 'DELETE', '/v1/inventory', read), 405);
      assert.equal(await overSocket(api.baseUrl, 'GET', '/healthz', {}), 200);
      // Two failed authentications (a near-miss key), then the address is throttled.
      for (let i = 0; i < 2; i++) assert.equal(await overSocket(api.baseUrl, 'GET', '/v1/inventory', { authorization: `Bearer ${api.keys.read}x` }), 401);
      assert.equal(await overSocket(api.baseUrl, 'GET', '/v1/inventory', read), 429);
      assert.equal(await overSocket(api.baseUrl, 'GET', '/v1/inventory', read), 429);

      const text = await metrics.render();
      const requests = (operation: string, status: string) => sample(text, 'inventory_http_requests_total', { operation, status });
      assert.equal(requests('listInventory', '200'), lists);
      assert.equal(requests('listInventory', '401'), 2);
      assert.equal(requests('listInventory', '429'), 2);
      assert.equal(requests('updateInventory', '200'), 2);
      assert.equal(requests('getInventoryItem', '200'), 1);
      assert.equal(requests('not_found', '404'), 1);
      assert.equal(requests('method_not_allowed', '405'), 1);
      assert.equal(requests('health', '200'), 1);
      assert.equal(sample(text, 'inventory_http_request_duration_seconds_count', { operation: 'listInventory' }), lists + 4);
      assert.equal(sample(text, 'inventory_http_request_duration_seconds_bucket', { operation: 'listInventory', le: '+Inf' }), lists + 4);
      // Every operation label is there from the start, at zero if unused.
      for (const operation of OPERATION_LABELS) assert.notEqual(sample(text, 'inventory_http_request_duration_seconds_count', { operation }), undefined, operation);
      assert.equal(sample(text, 'inventory_rate_limited_total', { reason: 'failed_authentication_throttle' }), 2);
      assert.equal(sample(text, 'inventory_store_duration_seconds_count', { operation: 'applyChange', backend }), 2);
      assert.ok((sample(text, 'inventory_store_duration_seconds_count', { operation: 'changesSince', backend }) ?? 0) >= 1);
      assert.equal(sample(text, 'inventory_group_commit_batch_size_count'), 2);
      assert.equal(sample(text, 'inventory_group_commit_batch_size_bucket', { le: '1' }), 2);
      assert.ok((sample(text, 'inventory_list_cache_reads_total', { result: 'miss' }) ?? 0) >= 1);
      assert.ok((sample(text, 'inventory_list_cache_reads_total', { result: 'hit' }) ?? 0) >= 1);
      assert.equal(sample(text, 'inventory_entries'), PETS.length);
      assert.ok((sample(text, 'process_cpu_user_seconds_total') ?? 0) > 0, 'process metrics');
      assert.notEqual(sample(text, 'nodejs_heap_size_used_bytes'), undefined);

      for (const secret of [api.keys.read, api.keys.write, `${api.keys.read}x`, ...(await keyIds(api)), 'secret-path', '/v1/inventory']) {
        assert.ok(!text.includes(secret), `the metrics hold ${secret}`);
      }
      // Labels are the code's words: operations and statuses only.
      const labelValues = new Set([...text.matchAll(/operation="([^"]*)"/g)].map((m) => m[1]!));
      assert.ok([...labelValues].every((v) => OPERATION_LABELS.includes(v) || /^[a-z][A-Za-z]+$/.test(v)), [...labelValues].join());
    });

    test('the event log: its head, open streams, events appended by type as read from the log, the lag to the streams', async (t) => {
      const metrics = new ServiceMetrics();
      const api = await buildTestApp(t, { backend, transport: 'http', items: PETS, metrics });
      const write = { authorization: `Bearer ${api.keys.write}` };
      const client = await new StreamClient(api.baseUrl, { key: api.keys.read }).opened();
      t.after(() => client.close());
      for (let q = 1; q <= 3; q++) {
        assert.equal(await overSocket(api.baseUrl, 'PATCH', '/v1/inventory/2', write, JSON.stringify({ quantity: 10 + q })), 200);
        await client.until((c) => c.events.length === q, `event ${q} on the stream`);
      }
      const head = client.seqs.at(-1)!;
      // The hub reads the log every 0.2 s: wait for it to have seen the last event, however long the machine takes.
      let text = await metrics.render();
      for (let tries = 0; sample(text, 'inventory_events_head') !== head && tries < 200; tries++) {
        await new Promise((wake) => setTimeout(wake, 50));
        text = await metrics.render();
      }
      assert.equal(sample(text, 'inventory_events_head'), head);
      assert.equal(sample(text, 'inventory_event_streams'), 1);
      assert.equal(sample(text, 'inventory_events_appended_total', { type: 'inventory.updated' }), 3, 'the changes since the process started following');
      assert.equal(sample(text, 'inventory_events_appended_total', { type: 'inventory.created' }), 0);
      const lagged = sample(text, 'inventory_event_stream_lag_seconds_count') ?? 0;
      assert.ok(lagged >= 1 && lagged <= 3, `${lagged} events measured on their way to a live stream`);
      assert.equal(sample(text, 'inventory_event_stream_lag_seconds_bucket', { le: '+Inf' }), lagged);
      client.close();
      await client.ended;
      for (let tries = 0; sample(text, 'inventory_event_streams') !== 0 && tries < 200; tries++) {
        await new Promise((wake) => setTimeout(wake, 50));
        text = await metrics.render();
      }
      assert.equal(sample(text, 'inventory_event_streams'), 0);
      assert.equal(sample(text, 'inventory_http_requests_total', { operation: 'streamEvents', status: '200' }), 1, 'a stream is counted once, when it ends');
    });
  });
}

test('without metrics the app counts nothing and keeps no timer', async (t) => {
  const api = await buildTestApp(t, { transport: 'http', items: PETS });
  assert.equal(await overSocket(api.baseUrl, 'GET', '/healthz', {}), 200);
  // The store is the one the app was given, not a measuring wrapper.
  assert.equal(api.app.store, api.store);
});

test('the metrics server: GET /metrics is Prometheus text; another path 404, another method 405, in the Error shape', async (t) => {
  const metrics = new ServiceMetrics();
  t.after(() => metrics.close());
  metrics.completed('listInventory', 200, 0.0001);
  const served = await startMetricsServer({ host: '127.0.0.1', port: 0, render: () => metrics.render(), onError: () => {} });
  t.after(served.close);
  const base = `http://127.0.0.1:${served.port}`;
  const ok = await fetch(`${base}/metrics`);
  assert.equal(ok.status, 200);
  assert.equal(ok.headers.get('content-type'), 'text/plain; version=0.0.4; charset=utf-8');
  const text = await ok.text();
  assert.equal(sample(text, 'inventory_http_requests_total', { operation: 'listInventory', status: '200' }), 1);
  assert.equal(sample(text, 'inventory_http_request_duration_seconds_bucket', { operation: 'listInventory', le: '0.0005' }), 1);
  assert.match(text, /# TYPE inventory_http_request_duration_seconds histogram/);
  assert.match(text, /# TYPE inventory_http_requests_total counter/);
  for (const [path, method, status, code] of [['/', 'GET', 404, 'not_found'], ['/metrics/x', 'GET', 404, 'not_found'], ['/metrics', 'POST', 405, 'method_not_allowed']] as const) {
    const res = await fetch(`${base}${path}`, { method });
    const body = await res.text();
    assertError({ status: res.status, headers: Object.fromEntries(res.headers), text: body, json: <T>() => JSON.parse(body) as T }, status, code);
  }
  const failing = await startMetricsServer({ host: '127.0.0.1', port: 0, render: () => Promise.reject(new Error('worker gone')), onError: () => {} });
  t.after(failing.close);
  const failed = await fetch(`http://127.0.0.1:${failing.port}/metrics`);
  const body = await failed.text();
  assertError({ status: failed.status, headers: Object.fromEntries(failed.headers), text: body, json: <T>() => JSON.parse(body) as T }, 500, 'internal_error');
});
