import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import { eventJson } from '../../src/domain/event.js';
import { main } from '../../src/cli/main.js';
import { BACKENDS, backendSkip, createTestDatabase } from '../support/backends.js';
import { runCli, runOn, type Run } from '../support/cli.js';
import { BIN, tempDir, until, waitFor } from '../support/process.js';
import { created, newReservation, testOrigin } from '../support/reservations.js';
import { change } from '../support/store.js';

const ABOVE_SAFE = 2n ** 53n + 1n; // 9007199254740993: a double would print ...992

/** A running `events tail`: what it printed so far, and how to stop it as Ctrl-C does. */
interface Tail {
  out: () => string;
  err: () => string;
  /** The lines printed so far. */
  lines: () => string[];
  /** Aborts its stop signal; resolves with what the run gave. */
  stop: () => Promise<Run>;
}

/** Starts `events tail ARGS` in-process on the database, and waits until it says where it starts. */
async function startTail(t: TestContext, databaseUrl: string, ...args: string[]): Promise<Tail> {
  let out = '';
  let err = '';
  const stopper = new AbortController();
  const running = main(['events', 'tail', ...args], {
    env: { DATABASE_URL: databaseUrl },
    stdout: (s) => (out += s),
    stderr: (s) => (err += s),
    stopSignal: stopper.signal,
  });
  t.after(() => stopper.abort());
  await waitFor(() => err.includes('Following') || /^petstore-inventory: /m.test(err), 20_000);
  return {
    out: () => out,
    err: () => err,
    lines: () => out.split('\n').filter(Boolean),
    async stop() {
      stopper.abort();
      return { code: await running, out, err };
    },
  };
}

/** Waits, generously, until the tail has printed `n` lines. */
async function linesOf(tail: Tail, n: number): Promise<string[]> {
  await waitFor(() => tail.lines().length >= n, 20_000).catch(() => assert.fail(`expected ${n} lines, got:\n${tail.out()}\nstderr:\n${tail.err()}`));
  return tail.lines();
}

for (const backend of BACKENDS) {
  describe(`events tail on ${backend}`, { skip: await backendSkip(backend) }, () => {
    test('--after 0 --json prints every event exactly as the feed sends it, then follows changes made by another process', async (t) => {
      const db = await createTestDatabase(backend, t);
      const store = await db.open();
      await store.changes.addItems([{ petId: ABOVE_SAFE, quantity: 3, status: 'available' }]);
      await store.changes.applyChange(change(ABOVE_SAFE, 5, { reason: 'received', keyId: 'key_t', requestId: 'r-1' }));

      const tail = await startTail(t, db.databaseUrl, '--after', '0', '--json');
      assert.match(tail.err(), /^Following the change events after 0; Ctrl-C stops\.\n/);
      const before = await linesOf(tail, 2);
      const logged = (await store.events.readEvents(0, 100)).items;
      assert.deepEqual(before, logged.map(eventJson), 'the feed\'s bytes, one event a line');
      assert.match(before[0]!, /"type":"inventory\.created".*"petId":9007199254740993,/);

      // A store of its own: on SQLite nothing tells the tail's store of these writes; it reads them at its poll.
      const other = await db.open();
      await other.changes.applyChange(change(ABOVE_SAFE, 9, { keyId: 'key_u', requestId: 'r-2' }));
      await other.changes.retireEntry(ABOVE_SAFE, { force: true, at: new Date() });
      const all = await linesOf(tail, 4);
      assert.deepEqual(all, (await store.events.readEvents(0, 100)).items.map(eventJson));
      assert.deepEqual(all.map((l) => (JSON.parse(l) as { type: string }).type), ['inventory.created', 'inventory.updated', 'inventory.updated', 'inventory.deleted']);

      const run = await tail.stop();
      assert.equal(run.code, 0, run.err);
      assert.equal(tail.lines().length, 4, 'nothing printed twice');
    });

    test('without --after it starts at the newest event, and prints a line a person reads for each change', async (t) => {
      const db = await createTestDatabase(backend, t);
      const store = await db.open();
      await store.changes.addItems([{ petId: -5n, quantity: 1, status: 'pending' }]);
      const head = await store.events.head();
      assert.ok(head > 0);

      const tail = await startTail(t, db.databaseUrl);
      assert.match(tail.err(), new RegExp(`^Following the change events after ${head} \\(the newest\\); Ctrl-C stops\\.\\n`));
      await store.changes.applyChange(change(-5n, 4, { reason: 'returned', keyId: 'key_x', requestId: 'req-9' }));
      await store.changes.addItems([{ petId: ABOVE_SAFE, quantity: 2, status: 'sold' }]);
      const lines = await linesOf(tail, 2);
      const [updated, created] = (await store.events.readEvents(head, 10)).items;
      assert.deepEqual(lines, [
        `${updated!.seq}  ${updated!.occurredAt.toISOString()}  updated  pet -5  1 -> 4  pending  returned  key key_x request req-9`,
        `${created!.seq}  ${created!.occurredAt.toISOString()}  created  pet ${ABOVE_SAFE}  - -> 2  sold  -  cli`,
      ]);
      assert.equal((await tail.stop()).code, 0);
    });

    test('a reservation\'s events print as lines too: its id, every pet it holds, its status, reference and who; an expiry says expiry', async (t) => {
      const db = await createTestDatabase(backend, t);
      const store = await db.open();
      await store.changes.addItems([{ petId: 5n, quantity: 19, status: 'available' }, { petId: ABOVE_SAFE, quantity: 2, status: 'available' }]);
      const head = await store.events.head();

      const tail = await startTail(t, db.databaseUrl);
      const sold = created(await store.reservations.create(newReservation([[5n, 2]], { reference: 'order-1234', origin: { keyId: 'key_s', requestId: 'req-a' } })));
      await store.reservations.end(sold.id, 'commit', testOrigin({ keyId: 'key_s', requestId: 'req-b' }));
      const given = created(await store.reservations.create(newReservation([[5n, 1], [ABOVE_SAFE, 1]], { origin: { keyId: 'key_s', requestId: 'req-c' } })));
      await store.reservations.end(given.id, 'release', testOrigin({ source: 'cli', keyId: 'cli:reservations', keyName: 'reservations', requestId: 'release-1' }));
      const lapsing = created(await store.reservations.create(newReservation([[5n, 1]], { ttlSeconds: 1, origin: { keyId: 'key_s', requestId: 'req-d' } })));
      // The store's clock decides expiry; this waits only until it has passed, however long that takes.
      await until(async () => (await store.reservations.expireDue()).length > 0, 'the lapsed reservation marked', { timeoutMs: 20_000, everyMs: 100 });

      const lines = await linesOf(tail, 7);
      const events = (await store.events.readEvents(head, 10)).items;
      const at = (i: number) => `${events[i]!.seq}  ${events[i]!.occurredAt.toISOString()}`;
      assert.deepEqual(lines, [
        `${at(0)}  reservation.created  ${sold.id}  pet 5 x2  active  order-1234  key key_s request req-a`,
        `${at(1)}  updated  pet 5  19 -> 17  available  sold  key key_s request req-b`,
        `${at(2)}  reservation.committed  ${sold.id}  pet 5 x2  committed  order-1234  key key_s request req-b`,
        `${at(3)}  reservation.created  ${given.id}  pet 5 x1, pet ${ABOVE_SAFE} x1  active  -  key key_s request req-c`,
        `${at(4)}  reservation.released  ${given.id}  pet 5 x1, pet ${ABOVE_SAFE} x1  released  -  cli`,
        `${at(5)}  reservation.created  ${lapsing.id}  pet 5 x1  active  -  key key_s request req-d`,
        `${at(6)}  reservation.expired  ${lapsing.id}  pet 5 x1  expired  -  expiry`,
      ]);
      assert.equal((await tail.stop()).code, 0);
    });

    test('a position no longer kept says so on stderr and goes on from the newest', async (t) => {
      const db = await createTestDatabase(backend, t);
      const store = await db.open();
      await store.changes.addItems([{ petId: 1n, quantity: 1, status: 'available' }]);
      for (let q = 2; q <= 4; q++) await store.changes.applyChange(change(1n, q));
      // Everything so far is older than "now": all of it goes.
      await new Promise((resolve) => setTimeout(resolve, 5));
      assert.ok((await store.events.purgeEvents(new Date())) > 0);
      const head = await store.events.head();

      const tail = await startTail(t, db.databaseUrl, '--after', '1', '--json');
      await waitFor(() => tail.err().includes('no longer kept'), 20_000);
      assert.match(tail.err(), new RegExp(`The events after 1 are no longer kept \\(EVENTS_RETENTION_DAYS\\): what changed meanwhile is in "pets list"\\. Going on after ${head}, the newest\\.\\n`));
      await store.changes.applyChange(change(1n, 7));
      const [line] = await linesOf(tail, 1);
      assert.equal(line, eventJson((await store.events.readEvents(head, 1)).items[0]!));
      assert.equal((await tail.stop()).code, 0);
    });

    test('a position beyond the newest event (a rebuilt store) says so on stderr and goes on from the newest', async (t) => {
      const db = await createTestDatabase(backend, t);
      const store = await db.open();
      await store.changes.addItems([{ petId: 1n, quantity: 1, status: 'available' }]);
      const head = await store.events.head();
      const beyond = head + 40;

      const tail = await startTail(t, db.databaseUrl, '--after', String(beyond), '--json');
      await waitFor(() => tail.err().includes('Going on after'), 20_000);
      assert.equal(
        tail.err(),
        `Following the change events after ${beyond}; Ctrl-C stops.\n` +
          `No event ${beyond} in this store: its newest is ${head} (the store was rebuilt, or --after is from another store); ` +
          `what changed is in "pets list". Going on after ${head}, the newest.\n`,
      );
      await store.changes.applyChange(change(1n, 7));
      const [line] = await linesOf(tail, 1);
      assert.equal(line, eventJson((await store.events.readEvents(head, 1)).items[0]!));
      assert.equal((await tail.stop()).code, 0);
    });
  });
}

describe('events tail: usage', () => {
  test('--help says what it prints and how it stops, and opens no store', async (t) => {
    const file = join(tempDir(t), 'none.db');
    for (const argv of [['events', 'tail', '--help'], ['events', 'tail', '-h']]) {
      const r = await runOn(`sqlite:${file}`, ...argv);
      assert.equal(r.code, 0);
      assert.match(r.out, /^Usage: petstore-inventory events tail \[--after N\] \[--json\]\n[\s\S]*Ctrl-C[\s\S]*--after N[\s\S]*--json[\s\S]*exactly as GET \/v1\/events sends it/);
    }
    assert.match((await runCli({}, 'events', '--help')).out, /^Usage: petstore-inventory events <command>[\s\S]*tail/);
    assert.match((await runCli({}, '--help')).out, /\n {2}events +follow the change events/);
  });

  test('a bad --after, an unknown option or no store: one line, exit 2 or 1', async (t) => {
    const file = join(tempDir(t), 'none.db');
    for (const bad of ['-1', 'x', '1.5', '01', '9007199254740993']) {
      const r = await runOn(`sqlite:${file}`, 'events', 'tail', '--after', bad);
      assert.deepEqual([r.code, r.out], [2, ''], bad);
      assert.match(r.err, /^petstore-inventory: --after must be an event's seq, a whole number from 0 \(got ".*"\)\n$/, bad);
    }
    const unknown = await runOn(`sqlite:${file}`, 'events', 'tail', '--follow');
    assert.equal(unknown.code, 2);
    const missing = await runOn(`sqlite:${file}`, 'events', 'tail');
    assert.deepEqual([missing.code, missing.out], [1, '']);
    assert.match(missing.err, /^petstore-inventory: no store at .*none\.db/);
  });
});

test('the built bin: Ctrl-C (SIGINT) ends events tail with exit code 0, a copy of it too (timeout sends its signal to the process and its group)', { skip: await backendSkip('sqlite') }, async (t) => {
  const db = await createTestDatabase('sqlite', t);
  await (await db.open()).changes.addItems([{ petId: 42n, quantity: 7, status: 'available' }]);
  const proc = spawn(BIN, ['events', 'tail', '--after', '0'], { env: { ...process.env, DATABASE_URL: db.databaseUrl } });
  t.after(() => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
  });
  let out = '';
  let err = '';
  proc.stdout.on('data', (c: Buffer) => (out += c.toString()));
  proc.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  await waitFor(() => out.includes('pet 42'), 20_000).catch(() => assert.fail(`no event printed:\n${out}\n${err}`));
  proc.kill('SIGINT');
  // The copy comes a moment later, once the first has been handled and while the command ends.
  setTimeout(() => proc.kill('SIGINT'), 15);
  assert.equal(await exited, 0, err);
  assert.match(out, /^\d+ {2}\S+ {2}created {2}pet 42 {2}- -> 7 {2}available {2}- {2}cli\n$/);
});
