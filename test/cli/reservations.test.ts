import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { availableOf } from '../../src/domain/inventory.js';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';
import { BACKENDS, backendSkip, createTestDatabase } from '../support/backends.js';
import { runOn as run } from '../support/cli.js';
import { created, newReservation, testOrigin } from '../support/reservations.js';

/** What `reservations list --json` prints: a page as GET /v1/reservations answers it. */
interface ReservationPage {
  items: { id: string; status: string; items: unknown }[];
  nextCursor: string | null;
}

/** A store with pets 1 (10 in stock) and 2 (4), made through the CLI as an operator would. */
async function stockedStore(backend: (typeof BACKENDS)[number], t: Parameters<typeof createTestDatabase>[1]): Promise<{ url: string; store: Store }> {
  const { databaseUrl: url } = await createTestDatabase(backend, t);
  assert.equal((await run(url, 'pets', 'add', '--pet-id', '1', '--status', 'available', '--quantity', '10')).code, 0);
  assert.equal((await run(url, 'pets', 'add', '--pet-id', '2', '--status', 'available', '--quantity', '4')).code, 0);
  const store = await openStore(url);
  t.after(() => store.close());
  return { url, store };
}

for (const backend of BACKENDS) {
  describe(`reservations on ${backend}`, { skip: await backendSkip(backend) }, () => {
    test('list shows them newest first, by status, as a table or the API\'s page in JSON; show prints one', async (t) => {
      const { url, store } = await stockedStore(backend, t);
      assert.deepEqual(await run(url, 'reservations', 'list'), { code: 0, out: 'No reservations yet.\n', err: '' });
      const first = created(await store.reservations.create(newReservation([[1n, 2]], { reference: 'order-1' })));
      const second = created(await store.reservations.create(newReservation([[1n, 1], [2n, 3]])));
      assert.equal((await store.reservations.end(first.id, 'commit', testOrigin())).kind, 'ended');

      const table = await run(url, 'reservations', 'list');
      assert.equal(table.code, 0, table.err);
      const lines = table.out.trimEnd().split('\n');
      assert.match(lines[0]!, /^ID +STATUS +ITEMS +REFERENCE +EXPIRES$/);
      assert.match(lines[1]!, new RegExp(`^${second.id}  active +1x1,2x3 +- +\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ$`));
      assert.match(lines[2]!, new RegExp(`^${first.id}  committed +1x2 +order-1 +`));
      assert.equal(lines.length, 3);

      const json = await run(url, 'reservations', 'list', '--status', 'active', '--json');
      assert.equal(json.code, 0, json.err);
      const listed = JSON.parse(json.out) as ReservationPage;
      assert.deepEqual(listed.items.map((r) => [r.id, r.status, r.items]), [[second.id, 'active', [{ petId: 1, quantity: 1 }, { petId: 2, quantity: 3 }]]]);
      assert.equal(listed.nextCursor, null, 'the last page');
      assert.deepEqual(await run(url, 'reservations', 'list', '--status', 'released'), { code: 0, out: 'No released reservations.\n', err: '' });

      const shown = await run(url, 'reservations', 'show', first.id);
      assert.equal(shown.code, 0, shown.err);
      assert.deepEqual(JSON.parse(shown.out), {
        id: first.id, status: 'committed', items: [{ petId: 1, quantity: 2 }], reference: 'order-1',
        createdAt: first.createdAt.toISOString(), expiresAt: first.expiresAt.toISOString(),
      });
    });

    test('--cursor pages through every reservation, from the table\'s last line or from --json\'s nextCursor', async (t) => {
      const { url, store } = await stockedStore(backend, t);
      const newestFirst: string[] = [];
      for (let i = 0; i < 5; i++) newestFirst.unshift(created(await store.reservations.create(newReservation([[1n, 1]]))).id);

      const seen: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await run(url, 'reservations', 'list', '--limit', '2', ...(cursor === undefined ? [] : ['--cursor', cursor]));
        assert.deepEqual([page.code, page.err], [0, '']);
        const lines = page.out.trimEnd().split('\n');
        cursor = /^Older reservations: --cursor (r\d+)$/.exec(lines.at(-1)!)?.[1];
        seen.push(...lines.slice(1, cursor === undefined ? undefined : -1).map((line) => line.split(' ')[0]!));
      } while (cursor !== undefined);
      assert.deepEqual(seen, newestFirst, 'three pages, each reservation once, newest first');

      const first = JSON.parse((await run(url, 'reservations', 'list', '--limit', '3', '--json')).out) as ReservationPage;
      assert.deepEqual(first.items.map((r) => r.id), newestFirst.slice(0, 3));
      assert.match(first.nextCursor!, /^r\d+$/);
      const rest = await run(url, 'reservations', 'list', '--limit', '3', '--json', '--cursor', first.nextCursor!);
      assert.deepEqual([rest.code, rest.err], [0, '']);
      const last = JSON.parse(rest.out) as ReservationPage;
      assert.deepEqual([last.items.map((r) => r.id), last.nextCursor], [newestFirst.slice(3), null]);
      assert.deepEqual(
        await run(url, 'reservations', 'list', '--status', 'committed', '--cursor', first.nextCursor!),
        { code: 0, out: 'No committed reservations before that cursor.\n', err: '' },
      );
    });

    test('release gives the stock back with a cli event, again changes nothing; a committed or expired one exits 1', async (t) => {
      const { url, store } = await stockedStore(backend, t);
      const held = created(await store.reservations.create(newReservation([[2n, 4]])));
      assert.equal(availableOf((await store.entries.getEntry(2n))!.item), 0, 'all 4 held');
      const head = await store.events.head();

      const released = await run(url, 'reservations', 'release', held.id);
      assert.equal(released.code, 0, released.err);
      assert.equal((JSON.parse(released.out) as { status: string }).status, 'released');
      assert.equal(released.err, `Released ${held.id}.\n`);
      assert.equal(availableOf((await store.entries.getEntry(2n))!.item), 4, 'the units are available again');
      const events = (await store.events.readEvents(head, 10)).items;
      assert.deepEqual(events.map((e) => [e.type, e.source, e.keyId]), [['reservation.released', 'cli', null]]);

      const again = await run(url, 'reservations', 'release', held.id);
      assert.deepEqual([again.code, again.err], [0, `${held.id} was already released; nothing was changed.\n`]);
      assert.equal((await store.events.readEvents(head, 10)).items.length, 1, 'nothing written the second time');

      const sold = created(await store.reservations.create(newReservation([[1n, 1]])));
      assert.equal((await store.reservations.end(sold.id, 'commit', testOrigin())).kind, 'ended');
      const refused = await run(url, 'reservations', 'release', sold.id);
      assert.deepEqual(refused, { code: 1, out: '', err: `petstore-inventory: reservation ${sold.id} is committed, so it cannot be released; nothing was changed\n` });

      const lapsing = created(await store.reservations.create(newReservation([[1n, 1]], { ttlSeconds: 1 })));
      // The store's clock decides expiry; this waits only until it has passed, however long that takes.
      while ((await store.reservations.get(lapsing.id))!.status !== 'expired') await sleep(100);
      const lapsed = await run(url, 'reservations', 'release', lapsing.id);
      assert.equal(lapsed.code, 1);
      assert.match(lapsed.err, /is expired, so it cannot be released/);
      assert.equal((await run(url, 'reservations', 'list', '--status', 'expired', '--json')).out.includes(lapsing.id), true);
    });

    test('a bad call exits 2, an unknown reservation 1; --help exits 0', async (t) => {
      const { url } = await stockedStore(backend, t);
      const unknown = 'res_000000000000000000000000';
      const cases: [string[], number, RegExp][] = [
        [['show', unknown], 1, /no reservation has the id res_0{24}/],
        [['release', unknown], 1, /no reservation has the id res_0{24}/],
        [['show'], 2, /reservations show takes exactly one reservation ID/],
        [['release', unknown, unknown], 2, /reservations release takes exactly one reservation ID/],
        [['show', 'res_12'], 2, /a reservation ID is res_ and 24 hex digits \(got "res_12"\)/],
        [['list', '--status', 'held'], 2, /--status must be one of active, committed, released, expired \(got "held"\)/],
        [['list', '--limit', '0'], 2, /--limit must be a whole number from 1 to 500/],
        [['list', '--cursor', 'x'], 2, /--cursor must be the nextCursor of a page, unchanged \(got "x"\)/],
        [['list', '--cursor', 'h5'], 2, /--cursor must be the nextCursor of a page, unchanged \(got "h5"\)/],
        [['list', '--cursor', 'r0'], 2, /--cursor must be the nextCursor of a page, unchanged/],
        [['list', '--cursor', 'r9223372036854775808'], 2, /--cursor must be the nextCursor of a page, unchanged/],
        [['list', '--jsn'], 2, /Unknown option '--jsn'/],
        [['hold'], 2, /reservations has no command "hold": use list, show, release/],
      ];
      for (const [args, code, message] of cases) {
        const r = await run(url, 'reservations', ...args);
        assert.equal(r.code, code, `${args.join(' ')}: ${r.err}`);
        assert.equal(r.out, '');
        assert.match(r.err, message);
      }
      for (const command of ['list', 'show', 'release']) {
        const help = await run(url, 'reservations', command, '--help');
        assert.equal(help.code, 0);
        assert.match(help.out, new RegExp(`^Usage: petstore-inventory reservations ${command}`));
      }
      assert.match((await run(url, 'reservations', 'show', 'x')).err, /^petstore-inventory: /, 'one line naming the program');
    });
  });
}

test('reservations list on a store that does not exist fails naming it', async () => {
  const r = await run('sqlite:/nonexistent-dir-for-test/inventory.db', 'reservations', 'list');
  assert.equal(r.code, 1);
  assert.match(r.err, /no store at \/nonexistent-dir-for-test\/inventory\.db/);
});
