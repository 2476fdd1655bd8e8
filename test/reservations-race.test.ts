import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import { issueApiKey } from '../src/auth/issue-key.js';
import { BACKENDS, backendSkip, createTestDatabase, type Backend, type TestDatabase } from './support/backends.js';
import { pgbouncerSkip, startPgBouncer } from './support/pgbouncer.js';
import { startServerProcess, type ServerProcess } from './support/process.js';

/**
 * The race the issue names: 200 checkouts at once each reserve 1 of a pet with 50 available, over
 * HTTP, spread over the instances serving one store. Exactly 50 are held and 150 refused with
 * 409 insufficient_stock, whatever the interleaving (decisions 12.7: on PostgreSQL one statement
 * judges and holds under the entry's row lock; on SQLite the writer takes them one at a time).
 */

const CHECKOUTS = 200;
const AVAILABLE = 50;

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

/** A fresh database with pet 1 (50 in stock) and a storefront's key, seeded from the test. */
async function seeded(t: TestContext, backend: Backend): Promise<{ db: TestDatabase; key: string }> {
  const db = await createTestDatabase(backend, t);
  const store = await db.open();
  await store.changes.addItems([{ petId: 1n, quantity: AVAILABLE, status: 'available' }]);
  const { key } = await issueApiKey(store.keys, { name: 'storefront', environment: 'production', scopes: ['reservations:write'], expiresAt: null });
  return { db, key };
}

async function call(server: ServerProcess, key: string, method: string, path: string, body?: unknown): Promise<Answer> {
  const res = await fetch(`${server.baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** All the checkouts at once, each to the next server in turn; then what the servers and the store say. */
async function race(servers: readonly ServerProcess[], key: string, db: TestDatabase): Promise<void> {
  const answers = await Promise.all(
    Array.from({ length: CHECKOUTS }, (_, i) => call(servers[i % servers.length]!, key, 'POST', '/v1/reservations', { items: [{ petId: 1, quantity: 1 }], reference: `cart-${i}` })),
  );
  const held = answers.filter((a) => a.status === 201);
  const refused = answers.filter((a) => a.status === 409);
  assert.deepEqual([held.length, refused.length], [AVAILABLE, CHECKOUTS - AVAILABLE], `statuses: ${JSON.stringify([...new Set(answers.map((a) => a.status))])}`);
  for (const r of refused) {
    assert.deepEqual(Object.keys(r.body).sort(), ['code', 'index', 'message', 'status']);
    assert.deepEqual([r.body['code'], r.body['status'], r.body['index']], ['insufficient_stock', 409, 0]);
  }
  assert.equal(new Set(held.map((a) => a.body['id'])).size, AVAILABLE, 'each hold its own reservation');
  // Every server reads the same: all 50 held, none available.
  for (const server of servers) {
    const entry = await call(server, key, 'GET', '/v1/inventory/1');
    assert.deepEqual([entry.body['quantity'], entry.body['reserved'], entry.body['available']], [AVAILABLE, AVAILABLE, 0]);
  }
  const active = await call(servers[0]!, key, 'GET', '/v1/reservations?status=active&limit=500');
  assert.equal((active.body['items'] as unknown[]).length, AVAILABLE);
  const [row] = await db.sql<{ holds: number | string }>("SELECT COALESCE(SUM(quantity), 0) AS holds FROM reservation_items ri JOIN reservations r ON r.place = ri.place WHERE r.status = 'active'");
  assert.equal(Number(row!.holds), AVAILABLE, 'the store holds exactly what was available');
}

const SKIP = { sqlite: await backendSkip('sqlite'), postgres: await backendSkip('postgres') };
const PGBOUNCER_SKIP = SKIP.postgres || pgbouncerSkip();

describe('200 concurrent reservations of 1 for a pet with 50 available', () => {
  for (const backend of BACKENDS) {
    test(`on ${backend}, through one server over HTTP: 50 held, 150 refused`, { skip: SKIP[backend] }, async (t) => {
      const { db, key } = await seeded(t, backend);
      const server = await startServerProcess(t, { DATABASE_URL: db.databaseUrl });
      await race([server], key, db);
    });
  }

  test('on PostgreSQL, across two instances: 50 held, 150 refused', { skip: SKIP.postgres }, async (t) => {
    const { db, key } = await seeded(t, 'postgres');
    const servers = await Promise.all([0, 1].map(() => startServerProcess(t, { DATABASE_URL: db.databaseUrl })));
    await race(servers, key, db);
  });

  test('on PostgreSQL through PgBouncer in transaction mode, across two instances: 50 held, 150 refused', { skip: PGBOUNCER_SKIP }, async (t) => {
    const { db, key } = await seeded(t, 'postgres');
    // The schema of the test's database, through the pooler: every connection of both servers goes through it.
    const through = new URL(await startPgBouncer(t));
    through.searchParams.set('schema', db.location);
    const servers = await Promise.all([0, 1].map(() => startServerProcess(t, { DATABASE_URL: through.toString() })));
    await race(servers, key, db);
  });
});
