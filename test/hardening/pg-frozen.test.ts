import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import { promisify } from 'node:util';
import pg from 'pg';
import { adminQuery, backendSkip, createTestDatabase, TEST_DATABASE_URL, type TestDatabase } from '../support/backends.js';
import { BIN, sleep, startServerProcess, waitFor, withDeadline, type ServerProcess } from '../support/process.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { byScale } from '../support/scale.js';

/** The store timeout the server runs with here: short, so the test is quick; the mechanism is the same at the default. */
const STORE_TIMEOUT_MS = 2000;
/** The least time PostgreSQL stays frozen; it stays frozen until every kind of request has been refused meanwhile. */
const FREEZE_MS = byScale(3000, 20_000);
/** How long the test waits for what must happen (answers while frozen, recovery after the thaw) before it gives up: a deadline on waiting, never a measure of speed. */
const LIVENESS_MS = 60_000;
/** Concurrent clients of the light mixed load, per kind of request. */
const CLIENTS_PER_KIND = byScale(2, 4);
/** Pets the plain PATCHes and GETs use; the ones with an Idempotency-Key each get a pet of their own, from IDEM_PET_BASE up. */
const PETS = 20;
const IDEM_PET_BASE = 1000;
const IDEM_PETS = 400;

const run = promisify(execFile);

type Kind = 'list' | 'one' | 'history' | 'patch' | 'patch-idempotent' | 'unknown-key' | 'new-key' | 'readyz';

interface Sent {
  kind: Kind;
  requestId: string;
  startedAt: number;
  ms: number;
  status: number;
  headers: Headers;
  text: string;
  /** For PATCHes: the pet, the body and the Idempotency-Key. */
  patch?: { petId: number; quantity: number; idempotencyKey?: string };
}

async function cli(db: TestDatabase, ...args: string[]): Promise<string> {
  return (await run(BIN, args, { env: { ...process.env, DATABASE_URL: db.databaseUrl } })).stdout.trim();
}

let sequence = 0;

async function send(
  server: ServerProcess,
  kind: Kind,
  key: string,
  method: string,
  path: string,
  patch?: Sent['patch'],
  requestId = `frz-${kind}-${++sequence}`,
): Promise<Sent> {
  const headers: Record<string, string> = { authorization: `Bearer ${key}`, 'x-request-id': requestId };
  if (patch) headers['content-type'] = 'application/json';
  if (patch?.idempotencyKey) headers['idempotency-key'] = patch.idempotencyKey;
  const startedAt = performance.now();
  // No timeout of the client's own: the point is to see how long the service takes.
  const res = await fetch(`${server.baseUrl}${path}`, { method, headers, ...(patch ? { body: JSON.stringify({ quantity: patch.quantity }) } : {}) });
  const text = await res.text();
  return { kind, requestId, startedAt, ms: performance.now() - startedAt, status: res.status, headers: res.headers, text, ...(patch ? { patch } : {}) };
}

describe('PostgreSQL frozen (packets held, not refused)', { skip: await backendSkip('postgres') }, () => {
  test('every kind of request is answered while PostgreSQL is frozen, none waits for the thaw; after it the service recovers and no acknowledged write is lost', async (t) => {
    const db = await createTestDatabase('postgres', t);
    const store = await db.open();
    await store.changes.addItems([
      ...Array.from({ length: PETS }, (_, i) => ({ petId: BigInt(i + 1), quantity: 0, status: 'available' as const })),
      ...Array.from({ length: IDEM_PETS }, (_, i) => ({ petId: BigInt(IDEM_PET_BASE + i), quantity: 0, status: 'available' as const })),
    ]);
    await store.close();
    const key = await cli(db, 'keys', 'create', '--name', 'frozen', '--scope', 'inventory:write');
    // Keys this instance has never looked up: their first request waits on the store for the lookup.
    const newKeys = await Promise.all([1, 2, 3, 4].map((n) => cli(db, 'keys', 'create', '--name', `new-${n}`, '--scope', 'inventory:read')));
    const livePrefix = key.slice(0, key.indexOf('_', 4) + 1);

    const target = new URL(TEST_DATABASE_URL);
    const proxy = new TcpProxy({ host: target.hostname || '127.0.0.1', port: Number(target.port || 5432) });
    await proxy.start();
    t.after(() => proxy.cut());
    const viaProxy = new URL(db.databaseUrl);
    viaProxy.hostname = '127.0.0.1';
    viaProxy.port = String(proxy.port);
    const server = await startServerProcess(t, { DATABASE_URL: viaProxy.toString(), STORE_TIMEOUT_MS: String(STORE_TIMEOUT_MS),
      // The unknown keys of the load must not get the test's own address throttled.
      AUTH_FAILURES_PER_MINUTE: '1000000',
    });
    assert.equal((await send(server, 'list', key, 'GET', '/v1/inventory')).status, 200);

    const sent: Sent[] = [];
    let idempotent = 0;
    let stop = false;
    const pick = (n: number) => 1 + Math.floor(Math.random() * n);
    const kinds: Kind[] = ['list', 'one', 'history', 'patch', 'patch-idempotent', 'unknown-key', 'readyz'];
    const client = async (kind: Kind) => {
      while (!stop) {
        const pet = pick(PETS);
        const request = (): Promise<Sent> => {
          switch (kind) {
            case 'list':
              return send(server, kind, key, 'GET', '/v1/inventory');
            case 'one':
              return send(server, kind, key, 'GET', `/v1/inventory/${pet}`);
            case 'history':
              return send(server, kind, key, 'GET', `/v1/inventory/${pet}/history?limit=5`);
            case 'patch':
              return send(server, kind, key, 'PATCH', `/v1/inventory/${pet}`, { petId: pet, quantity: pick(100_000) });
            case 'patch-idempotent': {
              const n = idempotent++ % IDEM_PETS;
              const petId = IDEM_PET_BASE + n;
              return send(server, kind, key, 'PATCH', `/v1/inventory/${petId}`, { petId, quantity: pick(100_000), idempotencyKey: `frz-${n}-${randomBytes(4).toString('hex')}` });
            }
            case 'unknown-key':
              return send(server, kind, `${livePrefix}${randomBytes(32).toString('base64url')}`, 'GET', '/v1/inventory');
            default:
              return send(server, kind, key, 'GET', '/readyz');
          }
        };
        sent.push(await request());
        await sleep(20);
      }
    };

    const load = Promise.all(kinds.flatMap((kind) => Array.from({ length: CLIENTS_PER_KIND }, () => client(kind))));
    await waitFor(() => kinds.every((kind) => sent.some((s) => s.kind === kind)), LIVENESS_MS);
    proxy.freeze();
    const frozenAt = performance.now();
    // A key seen for the first time while frozen, at intervals through the freeze.
    const firstUses = newKeys.map(async (newKey, n) => {
      await sleep((n * FREEZE_MS) / newKeys.length);
      sent.push(await send(server, 'new-key', newKey, 'GET', '/v1/inventory/1'));
    });
    await sleep(FREEZE_MS);
    const refusedWhileFrozen = (kind: Kind) => sent.some((s) => s.kind === kind && s.startedAt >= frozenAt && s.status === 503);
    // Still frozen until each kind has met the frozen store (asserted below, by kind); the deadline only ends a wait that would never succeed.
    await waitFor(() => kinds.every(refusedWhileFrozen), LIVENESS_MS).catch(() => {});
    stop = true;
    // Every request sent, before the freeze or during it, is answered while PostgreSQL is still frozen: none waits for the thaw.
    await withDeadline(Promise.all([load, ...firstUses]), LIVENESS_MS, 'answers to the requests in flight while PostgreSQL is frozen');
    proxy.thaw();

    const worst = new Map<Kind, number>();
    const frozenAnswers = sent.filter((s) => s.startedAt >= frozenAt);
    for (const s of sent) worst.set(s.kind, Math.max(worst.get(s.kind) ?? 0, s.ms));
    for (const [kind, ms] of [...worst].sort()) {
      const during = frozenAnswers.filter((s) => s.kind === kind);
      const worstFrozen = Math.max(0, ...during.map((s) => s.ms));
      t.diagnostic(`${kind}: ${during.length} answered while frozen (${during.filter((s) => s.status === 503).length} x 503), worst ${Math.round(worstFrozen)} ms while frozen, ${Math.round(ms)} ms overall`);
    }
    for (const kind of [...kinds, 'new-key'] as Kind[]) assert.ok(refusedWhileFrozen(kind), `some ${kind} request met the frozen store`);

    // Refusals while frozen are the usual 503 in the Error shape, with Retry-After.
    for (const s of sent.filter((x) => x.status >= 500)) {
      assert.equal(s.status, 503, `${s.kind} ${s.requestId}: ${s.text}`);
      const body = JSON.parse(s.text) as Record<string, unknown>;
      assert.deepEqual(Object.keys(body).sort(), ['code', 'message', 'status']);
      assert.equal(body.code, 'service_unavailable');
      assert.equal(body.status, 503);
      assert.equal(s.headers.get('retry-after'), '1');
    }

    // Recovery without a restart: every kind answers again, readiness included. The deadline only ends a wait that would never succeed.
    const recovered = performance.now();
    const giveUpAt = recovered + LIVENESS_MS;
    const recover = async (kind: Kind, method: string, path: string, patch?: Sent['patch']) => {
      for (;;) {
        const res = await send(server, kind, key, method, path, patch);
        if (res.status === 200) return res;
        if (performance.now() > giveUpAt) assert.fail(`${kind} still not answered 200 ${LIVENESS_MS} ms after the thaw: ${res.status} ${res.text}`);
        await sleep(100);
      }
    };
    await recover('readyz', 'GET', '/readyz');
    await recover('list', 'GET', '/v1/inventory');
    await recover('patch', 'PATCH', '/v1/inventory/1', { petId: 1, quantity: 7 });
    t.diagnostic(`recovered ${Math.round(performance.now() - recovered)} ms after the thaw`);

    // No pooled connection leaked or stuck: more parallel queries than the pool holds, all answered.
    const burst = await Promise.all(Array.from({ length: 40 }, (_, i) => send(server, 'one', key, 'GET', `/v1/inventory/${(i % PETS) + 1}`)));
    assert.deepEqual(new Set(burst.map((r) => r.status)), new Set([200]));

    // A PATCH answered 503 may have committed anyway; retried with its Idempotency-Key it applies exactly once.
    const refusedIdempotent = sent.filter((s) => s.kind === 'patch-idempotent' && s.status === 503);
    assert.ok(refusedIdempotent.length > 0);
    for (const s of refusedIdempotent) {
      const retry = await send(server, 'patch-idempotent', key, 'PATCH', `/v1/inventory/${s.patch!.petId}`, s.patch, `${s.requestId}-retry`);
      assert.equal(retry.status, 200, retry.text);
    }
    const schema = pg.escapeIdentifier(db.location);
    const rows = await adminQuery<{ request_id: string; pet_id: string }>(`SELECT request_id, pet_id::text FROM ${schema}.inventory_history`);
    const applied = new Map<string, number>();
    for (const r of rows) applied.set(r.request_id.replace(/-retry$/, ''), (applied.get(r.request_id.replace(/-retry$/, '')) ?? 0) + 1);
    const committedLate = refusedIdempotent.filter((s) => rows.some((r) => r.request_id === s.requestId)).length;
    t.diagnostic(`${refusedIdempotent.length} PATCHes with an Idempotency-Key answered 503; ${committedLate} of them committed anyway; each applied exactly once, original or retry`);
    for (const s of refusedIdempotent) assert.equal(applied.get(s.requestId), 1, `${s.requestId}: applied once, original or retry`);

    // Every acknowledged write is in the history (a 503 one may be there too).
    const acknowledged = sent.filter((s) => s.patch && s.status === 200);
    const written = new Set(rows.map((r) => r.request_id));
    for (const s of acknowledged) {
      assert.ok(written.has(s.requestId) || s.headers.get('idempotent-replayed') === 'true', `acknowledged ${s.requestId} is in the history`);
    }
    t.diagnostic(`${sent.length} requests, ${acknowledged.length} acknowledged PATCHes all found in the history`);
  });
});
