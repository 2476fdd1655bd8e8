import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import Database from 'better-sqlite3';
import { benchItems, seedDatabaseWith } from '../../bench/seed.js';
import { startServer, type RunningServer } from '../../bench/servers.js';
import { tempDir } from '../support/process.js';

/** Each test's bound: a server that never answers fails the test rather than hanging the run. */
const TEST = { timeout: 60_000 };

const PETS = 50;

type Commit = 'loop' | 'thread';

/** The service's database the bare server reads its pets from, seeded with PETS pets (each stocked `quantity`), and a key. */
async function seeded(t: TestContext, quantity?: number): Promise<{ databaseUrl: string; file: string; key: string }> {
  const file = join(tempDir(t), 'bench.db');
  const databaseUrl = `sqlite:${file}`;
  const items = benchItems(PETS).map((item) => (quantity === undefined ? item : { ...item, quantity }));
  return { databaseUrl, file, key: await seedDatabaseWith(databaseUrl, items) };
}

/** The SQLite bare durable server on a seeded database, writing history and events, committing as `commit` says; `.bare` is its own file. */
async function bareServer(t: TestContext, commit: Commit, quantity?: number) {
  const { databaseUrl, file, key } = await seeded(t, quantity);
  const server = await startServer('durable', { databaseUrl, key, pinned: false, env: { BARE_WRITES: 'events', BARE_COMMIT: commit } });
  t.after(() => server.stop());
  const send = (path: string, method: string, body: unknown) =>
    fetch(`${server.baseUrl}${path}`, { method, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) }).then(
      async (res) => [res.status, await res.text()] as const,
    );
  return { server, send, bare: `${file}.bare` };
}

/**
 * A burst of changes that share batches, each answer, and then, read through a connection of the
 * test's own, what the server's file holds (every change answered 200 is committed by then: its
 * entry's next version, its history row and its event).
 */
async function burst(t: TestContext, commit: Commit) {
  const { send, bare } = await bareServer(t, commit, 10);
  const answers = await Promise.all([
    ...Array.from({ length: PETS }, (_, i) => send(`/v1/inventory/${i + 1}`, 'PATCH', { quantity: i })),
    send(`/v1/inventory/${PETS + 1}`, 'PATCH', { quantity: 1 }),
    send('/v1/inventory/1/adjustments', 'POST', { delta: -1_000 }),
  ]);
  const file = new Database(bare, { readonly: true });
  const held = {
    quantities: file.prepare('SELECT pet_id, quantity, version FROM inventory ORDER BY pet_id').raw(true).all(),
    history: file.prepare('SELECT count(*) FROM history').pluck().get(),
    events: file.prepare('SELECT count(*) FROM events').pluck().get(),
    eventVersions: file.prepare('SELECT DISTINCT version FROM events').pluck().all(),
  };
  file.close();
  return { answers, held };
}

for (const commit of ['loop', 'thread'] as const) {
  test(`bare-durable-sqlite: BARE_COMMIT=${commit} answers a burst of changes, and its file then holds the rows each wrote`, TEST, async (t) => {
    const { answers, held } = await burst(t, commit);
    const items = benchItems(PETS);
    for (let i = 0; i < PETS; i++) {
      assert.deepEqual(answers[i], [200, `{"petId":${i + 1},"quantity":${i},"status":"${items[i]!.status}"}`]);
    }
    assert.deepEqual(answers[PETS], [404, '{"code":"not_found"}'], 'a pet with no entry');
    // Pet 1's PATCH and its adjustment may share a batch: the adjustment finds 0 or 10 either way, and goes below 0.
    assert.deepEqual(answers[PETS + 1], [409, '{"code":"insufficient_stock"}'], 'an adjustment below 0');
    assert.deepEqual(
      held.quantities,
      items.map((item, i) => [Number(item.petId), i, 2]),
      'each entry at its next version after its one change (the refused adjustment bumps none)',
    );
    assert.equal(held.history, PETS);
    assert.equal(held.events, PETS);
    assert.deepEqual(held.eventVersions, [2], 'each event carries the version its change made');
  });

  test(`bare-durable-sqlite: BARE_COMMIT=${commit} answers a burst of reservations 201, and its file then holds the rows each creation wrote`, TEST, async (t) => {
    const { send, bare } = await bareServer(t, commit, 10);
    const reserve = (petId: number, quantity: number) => send('/v1/reservations', 'POST', { items: [{ petId, quantity }], ttlSeconds: 3600 });
    const answers = await Promise.all([
      ...Array.from({ length: PETS }, (_, i) => reserve(i + 1, 1)),
      reserve(PETS + 1, 1),
      // Pet 1 has 10, 1 of them held by the first creation, whichever commits first: 10 more cannot be held.
      reserve(1, 10),
    ]);
    for (let i = 0; i < PETS; i++) {
      const [status, text] = answers[i]!;
      assert.equal(status, 201, text);
      const { id, createdAt, expiresAt, ...rest } = JSON.parse(text) as { id: string; createdAt: string; expiresAt: string };
      assert.match(id, /^res_[0-9a-f]{24}$/);
      assert.deepEqual(rest, { status: 'active', items: [{ petId: i + 1, quantity: 1 }], reference: null });
      assert.equal(Date.parse(expiresAt) - Date.parse(createdAt), 3_600_000, 'held for its ttlSeconds');
    }
    assert.deepEqual(answers[PETS], [404, '{"code":"not_found"}'], 'a pet with no entry');
    assert.deepEqual(answers[PETS + 1], [409, '{"code":"insufficient_stock"}'], 'more than is available');
    assert.deepEqual(await send('/v1/reservations', 'POST', { items: [] }), [400, '{"code":"invalid_body"}']);
    const file = new Database(bare, { readonly: true });
    t.after(() => file.close());
    assert.deepEqual(file.prepare('SELECT DISTINCT quantity, reserved, version FROM inventory').raw(true).all(), [[10, 1, 1]], 'each entry holds 1, its count and version unchanged');
    assert.equal(file.prepare("SELECT count(*) FROM reservations WHERE status = 'active'").pluck().get(), PETS);
    assert.equal(file.prepare('SELECT count(*) FROM reservation_items JOIN reservations USING (place) WHERE quantity = 1').pluck().get(), PETS);
    const events = file.prepare("SELECT payload FROM events WHERE type = 'reservation.created' ORDER BY seq").pluck().all() as string[];
    assert.equal(events.length, PETS);
    const first = JSON.parse(answers[0][1]) as { id: string; expiresAt: string };
    const payload = events.map((e) => JSON.parse(e) as { reservationId: string }).find((p) => p.reservationId === first.id);
    assert.deepEqual(payload, { reservationId: first.id, items: [['1', 1]], reference: null, expiresAt: Date.parse(first.expiresAt) }, "the service's payload");
  });

  test(`bare-durable-sqlite: BARE_COMMIT=${commit} answers a batch whose transaction failed 503, and the next batch commits`, TEST, async (t) => {
    const { send, bare } = await bareServer(t, commit);
    // Another connection holds the write lock past the server's busy timeout (better-sqlite3's 5 s): its transaction fails.
    const holder = new Database(bare);
    t.after(() => holder.close());
    holder.prepare('BEGIN IMMEDIATE').run();
    assert.deepEqual(await send('/v1/inventory/1', 'PATCH', { quantity: 7 }), [503, '{"code":"unavailable"}']);
    holder.prepare('ROLLBACK').run();
    assert.deepEqual(await send('/v1/inventory/1', 'PATCH', { quantity: 7 }), [200, `{"petId":1,"quantity":7,"status":"${benchItems(1)[0]!.status}"}`]);
  });
}

test('bare-durable-sqlite: BARE_COMMIT=thread starts a thread of its own, which the same server on the event loop has not', TEST, async (t) => {
  // A database each: a bare server makes its own file beside the one it is given.
  const servers: RunningServer[] = await Promise.all((['loop', 'thread'] as const).map(async (commit) => (await bareServer(t, commit)).server));
  // Started alike by the same node, the two differ in their threads by the writer thread alone (and what it starts).
  const [loop, thread] = servers.map((server) => readdirSync(`/proc/${server.pid}/task`).length);
  assert.ok(thread! > loop!, `threads: ${loop} on the event loop, ${thread} with BARE_COMMIT=thread`);
});

test('bare-durable-sqlite: a BARE_COMMIT it does not know stops it before it serves', TEST, async (t) => {
  const { databaseUrl, key } = await seeded(t);
  await assert.rejects(startServer('durable', { databaseUrl, key, pinned: false, env: { BARE_COMMIT: 'sideways' } }), /BARE_COMMIT must be loop or thread/);
});
