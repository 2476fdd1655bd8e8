import assert from 'node:assert/strict';
import { request } from 'node:http';
import { join } from 'node:path';
import { test } from 'node:test';
import { sample } from '../support/prometheus.js';
import { startServerProcess, tempDir, waitFor, type ServerProcess } from '../support/process.js';

const METRICS_LINE = /metrics listening at http:\/\/127\.0\.0\.1:(\d+)\/metrics/;

/** GET on a new connection each time, so the workers of a cluster share them. */
function get(url: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent: false }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.end();
  });
}

function metricsPort(server: ServerProcess): number | undefined {
  const match = METRICS_LINE.exec(server.stdout());
  return match ? Number(match[1]) : undefined;
}

test('without METRICS_PORT no metrics server starts', async (t) => {
  const server = await startServerProcess(t, { DATABASE_URL: `sqlite:${join(tempDir(t), 'x.db')}` });
  assert.equal((await get(`${server.baseUrl}/healthz`)).status, 200);
  assert.equal(metricsPort(server), undefined);
  assert.doesNotMatch(server.stdout(), /metrics/i);
  // The API port has no /metrics either: metrics never share the API's port.
  assert.equal((await get(`${server.baseUrl}/metrics`)).status, 401);
  server.proc.kill('SIGTERM');
  assert.equal(await server.exited, 0);
});

test('METRICS_PORT serves /metrics on its own port, and closes with the server', async (t) => {
  const server = await startServerProcess(t, { DATABASE_URL: `sqlite:${join(tempDir(t), 'x.db')}`, METRICS_PORT: '0' });
  const port = metricsPort(server);
  assert.ok(port, server.stdout());
  for (let i = 0; i < 3; i++) assert.equal((await get(`${server.baseUrl}/healthz`)).status, 200);
  const scraped = await get(`http://127.0.0.1:${port}/metrics`);
  assert.equal(scraped.status, 200);
  assert.equal(sample(scraped.text, 'inventory_http_requests_total', { operation: 'health', status: '200' }), 3);
  assert.equal(sample(scraped.text, 'inventory_entries'), 0);
  server.proc.kill('SIGTERM');
  assert.equal(await server.exited, 0);
});

test('serve --workers 2: the primary serves the sum of its workers', async (t) => {
  const server = await startServerProcess(t, { DATABASE_URL: `sqlite:${join(tempDir(t), 'x.db')}`, METRICS_PORT: '0' }, ['--workers', '2']);
  await waitFor(() => (server.stdout().match(/Server listening at/g) ?? []).length === 2, 30_000);
  const port = metricsPort(server);
  assert.ok(port, server.stdout());
  const sent = 24;
  for (let i = 0; i < sent; i++) assert.equal((await get(`${server.baseUrl}/healthz`)).status, 200);
  const completed = () =>
    server
      .stdout()
      .split('\n')
      .filter((l) => l.includes('"request completed"'))
      .map((l) => (JSON.parse(l) as { pid: number }).pid);
  // A worker logs a request after answering it, down a pipe this process reads in its own time: the last lines may
  // still be on their way when the last answer is in.
  await waitFor(() => completed().length === sent, 10_000);
  const byWorker = new Map<number, number>();
  for (const pid of completed()) byWorker.set(pid, (byWorker.get(pid) ?? 0) + 1);
  assert.equal(byWorker.size, 2, `both workers answered some (requests by pid): ${JSON.stringify(Object.fromEntries(byWorker))}`);
  const scraped = await get(`http://127.0.0.1:${port}/metrics`);
  assert.equal(scraped.status, 200);
  assert.equal(sample(scraped.text, 'inventory_http_requests_total', { operation: 'health', status: '200' }), sent);
  assert.equal(sample(scraped.text, 'inventory_http_request_duration_seconds_count', { operation: 'health' }), sent);
  // One store: the entries are the same in each worker, not added up.
  assert.equal(sample(scraped.text, 'inventory_entries'), 0);
  assert.ok((sample(scraped.text, 'process_cpu_user_seconds_total') ?? 0) > 0);
  server.proc.kill('SIGTERM');
  assert.equal(await server.exited, 0);
});
