import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { describe, test, type TestContext } from 'node:test';
import { promisify } from 'node:util';
import { backendSkip, createTestDatabase, TEST_DATABASE_URL, type TestDatabase } from './support/backends.js';
import { BIN, startServerProcess, withDeadline, type ServerProcess } from './support/process.js';
import { StreamClient } from './support/event-stream.js';
import { TcpProxy } from './support/tcp-proxy.js';
import { byScale } from './support/scale.js';

const run = promisify(execFile);
/** How long a test waits for what must happen before it gives up: a deadline on waiting, never a measure of speed. */
const LIVENESS_MS = 20_000;
/**
 * Read-modify-write clients on one entry through both instances, and the increments each makes: each round
 * lets one through and sends the rest back with a 412, so the requests grow with clients × increments.
 * Short in `npm test`; HARDENING_SCALE=full runs the 20 × 25 it was written with.
 */
const RMW_CLIENTS = byScale(8, 20);
const RMW_INCREMENTS = byScale(10, 25);
const RMW_TOTAL = RMW_CLIENTS * RMW_INCREMENTS;

/** Runs the CLI against the test database. */
async function cli(db: TestDatabase, ...args: string[]): Promise<string> {
  const { stdout } = await run(BIN, args, { env: { ...process.env, DATABASE_URL: db.databaseUrl } });
  return stdout;
}

async function call(server: ServerProcess, key: string, method: string, path: string, body?: object, headers: Record<string, string> = {}) {
  const res = await fetch(`${server.baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}), ...headers },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, text: await res.text(), headers: res.headers };
}

/** A database with pets 1..n and a write key, and two instances serving it. */
async function twoInstances(t: TestContext, pets: number, env: Record<string, string> = {}) {
  const db = await createTestDatabase('postgres', t);
  await (await db.open()).close();
  const key = (await cli(db, 'keys', 'create', '--name', 'instances', '--scope', 'inventory:write')).trim();
  for (let id = 1; id <= pets; id++) await cli(db, 'pets', 'add', '--pet-id', String(id), '--status', 'available', '--quantity', '0');
  const [a, b] = await Promise.all([startServerProcess(t, { DATABASE_URL: db.databaseUrl, ...env }), startServerProcess(t, { DATABASE_URL: db.databaseUrl, ...env })]);
  return { db, key, a, b };
}

describe('several instances on one PostgreSQL database', { skip: await backendSkip('postgres') }, () => {
  test('N instances starting at once migrate exactly once', async (t) => {
    const db = await createTestDatabase('postgres', t);
    const servers = await Promise.all([1, 2, 3, 4].map(() => startServerProcess(t, { DATABASE_URL: db.databaseUrl })));
    for (const s of servers) assert.equal((await fetch(`${s.baseUrl}/readyz`)).status, 200);
    const versions = await db.migrationVersions();
    assert.deepEqual(versions, [...new Set(versions)], 'each version once');
    assert.ok(versions.length > 0);
    // Exactly one of them found an empty store and printed a first-run key.
    assert.equal(servers.filter((s) => s.stderr().includes('First run')).length, 1);
  });

  test('a change through A is streamed by B, and by A, without NOTIFY being needed for correctness (the poll)', async (t) => {
    const { key, a, b } = await twoInstances(t, 3);
    const onB = await new StreamClient(b.baseUrl, { key }).opened();
    const onA = await new StreamClient(a.baseUrl, { key }).opened();
    t.after(() => [onA, onB].forEach((s) => s.close()));
    assert.deepEqual([onA.status, onB.status], [200, 200]);
    const sentAt = Date.now();
    assert.equal((await call(a, key, 'PATCH', '/v1/inventory/2', { quantity: 41 })).status, 200);
    await onB.until((s) => s.events.length === 1, 'the change through A on B');
    t.diagnostic(`streamed by the other instance ${Date.now() - sentAt} ms after the PATCH was sent`);
    const event = JSON.parse(onB.events[0]!.data!) as { type: string; data: { petId: number; quantity: number; source: string } };
    assert.deepEqual([event.type, event.data.petId, event.data.quantity, event.data.source], ['inventory.updated', 2, 41, 'api']);
    await onA.until((s) => s.events.length === 1, 'the change on A too');
    assert.deepEqual(onA.seqs, onB.seqs);
    // And the other way round, with the list's head as the handoff on both.
    const list = await call(a, key, 'GET', '/v1/inventory');
    assert.equal(Number(list.headers.get('x-events-head')), onB.seqs[0]);
    assert.equal((await call(b, key, 'PATCH', '/v1/inventory/3', { quantity: 7 })).status, 200);
    await onA.until((s) => s.events.length === 2, 'the change through B on A');
    await onB.until((s) => s.events.length === 2, 'the change through B on B');
    assert.deepEqual(onA.seqs, onB.seqs);
  });

  test('a PATCH through A is seen by the next GET through B', async (t) => {
    const { key, a, b } = await twoInstances(t, 3);
    assert.equal((await call(a, key, 'PATCH', '/v1/inventory/2', { quantity: 41 })).status, 200);
    const list = await call(b, key, 'GET', '/v1/inventory');
    assert.equal(list.text, '[{"petId":1,"quantity":0,"status":"available","reserved":0,"available":0},{"petId":2,"quantity":41,"status":"available","reserved":0,"available":41},{"petId":3,"quantity":0,"status":"available","reserved":0,"available":0}]');
  });

  // How soon is the key cache's lifetime (decisions 2.6), held with a clock of the test's own in test/auth/authenticator.test.ts.
  test('a revoked key is refused by every instance, each having served it before (decisions 2.6)', async (t) => {
    const { db, key, a, b } = await twoInstances(t, 1);
    assert.equal((await call(a, key, 'GET', '/v1/inventory')).status, 200);
    assert.equal((await call(b, key, 'GET', '/v1/inventory')).status, 200);
    const id = (JSON.parse(await cli(db, 'keys', 'list', '--json')) as { id: string; name: string }[]).find((k) => k.name === 'instances')!.id;
    await cli(db, 'keys', 'revoke', id);
    const revokedAt = Date.now();
    // Polled until both refuse it; then the time that took is held to the promise.
    for (const server of [a, b]) {
      while ((await call(server, key, 'GET', '/v1/inventory')).status !== 401) {
        if (Date.now() - revokedAt > LIVENESS_MS) assert.fail(`still accepted ${LIVENESS_MS} ms after revocation`);
        await new Promise((done) => setTimeout(done, 100));
      }
    }
    t.diagnostic(`revocation honoured by both instances after ${Date.now() - revokedAt} ms`);
    // Refused for good: no instance serves the key again from a lookup it kept.
    for (const server of [a, b]) assert.equal((await call(server, key, 'GET', '/v1/inventory')).status, 401);
  });

  test('200 concurrent PATCHes through both answer 200; each pet ends at its last acknowledged write', async (t) => {
    const pets = 4;
    const { key, a, b } = await twoInstances(t, pets);
    // All 200 in flight at once, on 4 pets, alternating instances.
    const burst = await Promise.all(
      Array.from({ length: 200 }, (_, i) => call(i % 2 ? a : b, key, 'PATCH', `/v1/inventory/${(i % pets) + 1}`, { quantity: 1000 + i })),
    );
    assert.deepEqual(burst.filter((r) => r.status !== 200), []);
    const afterBurst = JSON.parse((await call(a, key, 'GET', '/v1/inventory')).text) as { petId: number; quantity: number }[];
    for (const { petId, quantity } of afterBurst) {
      assert.equal((quantity - 1000) % pets, petId - 1, `pet ${petId} holds a value written to it`);
    }
    // Then chains, one per pet and all at once: each write waits for the previous one's 200.
    const last = new Map<number, number>();
    await Promise.all(
      Array.from({ length: pets }, async (_, p) => {
        for (let step = 0; step < 10; step++) {
          const quantity = 5000 + p * 100 + step;
          const res = await call(step % 2 ? a : b, key, 'PATCH', `/v1/inventory/${p + 1}`, { quantity });
          assert.equal(res.status, 200);
          last.set(p + 1, quantity);
        }
      }),
    );
    for (const server of [a, b]) {
      const items = JSON.parse((await call(server, key, 'GET', '/v1/inventory')).text) as { petId: number; quantity: number }[];
      for (const item of items) assert.equal(item.quantity, last.get(item.petId), `pet ${item.petId}`);
    }
  });

  test(`${RMW_CLIENTS} clients × ${RMW_INCREMENTS} read-modify-writes (GET, then PATCH If-Match, retry on 412) through both: +${RMW_TOTAL} exactly, ${RMW_TOTAL} chained history rows`, async (t) => {
    const { key, a, b } = await twoInstances(t, 1);
    let conflicts = 0;
    await Promise.all(
      Array.from({ length: RMW_CLIENTS }, async (_, c) => {
        for (let done = 0; done < RMW_INCREMENTS; ) {
          // Read through one instance and write through the other, alternating.
          const [reader, writer] = (c + done) % 2 ? [a, b] : [b, a];
          const read = await call(reader, key, 'GET', '/v1/inventory/1');
          const { quantity } = JSON.parse(read.text) as { quantity: number };
          const res = await call(writer, key, 'PATCH', '/v1/inventory/1', { quantity: quantity + 1 }, { 'if-match': read.headers.get('etag')! });
          if (res.status === 412) {
            conflicts++;
            continue;
          }
          assert.equal(res.status, 200, res.text);
          done++;
        }
      }),
    );
    assert.match((await call(b, key, 'GET', '/v1/inventory/1')).text, new RegExp(`"quantity":${RMW_TOTAL}\\b`));
    const rows: { previousQuantity: number; quantity: number }[] = [];
    for (let cursor: string | null = ''; cursor !== null; ) {
      const page = JSON.parse((await call(a, key, 'GET', `/v1/inventory/1/history?limit=500${cursor ? `&cursor=${cursor}` : ''}`)).text) as {
        items: typeof rows;
        nextCursor: string | null;
      };
      rows.push(...page.items);
      cursor = page.nextCursor;
    }
    assert.equal(rows.length, RMW_TOTAL);
    rows.forEach((row, i) => assert.equal(row.previousQuantity, i === rows.length - 1 ? 0 : rows[i + 1]!.quantity, `row ${i}`));
    t.diagnostic(`${conflicts} conflicts (412) retried across two instances`);
  });

  test('an idempotent PATCH through A is replayed by B; concurrent retries through both execute once', async (t) => {
    const { key, a, b } = await twoInstances(t, 2);
    const first = await call(a, key, 'PATCH', '/v1/inventory/1', { quantity: 9 }, { 'idempotency-key': 'order-77' });
    assert.equal(first.status, 200);
    const retry = await call(b, key, 'PATCH', '/v1/inventory/1', { quantity: 9 }, { 'idempotency-key': 'order-77' });
    assert.deepEqual([retry.status, retry.text, retry.headers.get('idempotent-replayed')], [200, first.text, 'true']);
    const other = await call(b, key, 'PATCH', '/v1/inventory/1', { quantity: 10 }, { 'idempotency-key': 'order-77' });
    assert.equal(other.status, 422);
    assert.equal((JSON.parse(other.text) as { code: string }).code, 'idempotency_key_reused');

    const burst = await Promise.all(
      Array.from({ length: 20 }, (_, i) => call(i % 2 ? a : b, key, 'PATCH', '/v1/inventory/2', { quantity: 5 }, { 'idempotency-key': 'burst' })),
    );
    assert.deepEqual(new Set(burst.map((r) => r.status)), new Set([200]));
    assert.equal(burst.filter((r) => r.headers.get('idempotent-replayed') !== 'true').length, 1, 'executed once');
    const history = JSON.parse((await call(a, key, 'GET', '/v1/inventory/2/history')).text) as { items: unknown[] };
    assert.equal(history.items.length, 1);
  });

  test('database outage: 503 in the Error shape within the timeout, /readyz 503, recovery without a restart', async (t) => {
    const db = await createTestDatabase('postgres', t);
    await (await db.open()).close();
    const key = (await cli(db, 'keys', 'create', '--name', 'outage', '--scope', 'inventory:write')).trim();
    await cli(db, 'pets', 'add', '--pet-id', '1', '--status', 'available');
    const target = new URL(TEST_DATABASE_URL);
    const proxy = new TcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
    await proxy.start();
    t.after(() => proxy.cut());
    const viaProxy = new URL(db.databaseUrl);
    viaProxy.hostname = '127.0.0.1';
    viaProxy.port = String(proxy.port);
    const server = await startServerProcess(t, { DATABASE_URL: viaProxy.toString() });
    assert.equal((await call(server, key, 'PATCH', '/v1/inventory/1', { quantity: 3 })).status, 200);

    await proxy.cut();
    for (const [method, path, body] of [['GET', '/v1/inventory'], ['PATCH', '/v1/inventory/1', { quantity: 4 }], ['GET', '/readyz']] as const) {
      const started = Date.now();
      const res = await withDeadline(call(server, key, method, path, body), LIVENESS_MS, `${method} ${path} during the outage`);
      const elapsed = Date.now() - started;
      assert.equal(res.status, 503, `${method} ${path}: ${res.text}`);
      const error = JSON.parse(res.text) as Record<string, unknown>;
      assert.deepEqual(Object.keys(error).sort(), ['code', 'message', 'status']);
      assert.equal(error.code, 'service_unavailable');
      assert.doesNotMatch(String(error.message), /ECONN|connect|terminat|pg|postgres/i, 'no driver message');
      t.diagnostic(`${method} ${path} during the outage: 503 after ${elapsed} ms`);
    }

    await proxy.restore();
    const restoredAt = Date.now();
    let res = await call(server, key, 'PATCH', '/v1/inventory/1', { quantity: 5 });
    while (res.status !== 200) {
      if (Date.now() - restoredAt > LIVENESS_MS) assert.fail(`not recovered ${LIVENESS_MS} ms after the database returned: ${res.status} ${res.text}`);
      await new Promise((done) => setTimeout(done, 100));
      res = await call(server, key, 'PATCH', '/v1/inventory/1', { quantity: 5 });
    }
    t.diagnostic(`recovered ${Date.now() - restoredAt} ms after the database returned`);
    assert.equal((await fetch(`${server.baseUrl}/readyz`)).status, 200);
    assert.match((await call(server, key, 'GET', '/v1/inventory')).text, /"quantity":5/);
  });
});
