import assert from 'node:assert/strict';
import { stockEvents } from '../support/store.js';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { parseDeltaText } from '../../src/cli/adjust.js';
import { openStore } from '../../src/store/open.js';
import { BACKENDS, backendSkip, createTestDatabase } from '../support/backends.js';
import { runOn as run } from '../support/cli.js';

const TWO_53_PLUS_1 = 9007199254740993n;

test('parseDeltaText: a non-zero signed integer within ±2147483647, written plainly', () => {
  for (const [text, value] of [['-1', -1], ['+5', 5], ['5', 5], ['2147483647', 2147483647], ['-2147483647', -2147483647]] as const) {
    assert.equal(parseDeltaText(text), value, text);
  }
  for (const text of ['0', '-0', '+0', '2147483648', '-2147483648', '1.5', '1e3', '05', ' 5', '', '-', '++5', '0x10', '99999999999']) {
    assert.equal(parseDeltaText(text), undefined, JSON.stringify(text));
  }
});

for (const backend of BACKENDS) {
  describe(`pets adjust on ${backend}`, { skip: await backendSkip(backend) }, () => {
    test('moves the count by the delta, prints the entry, writes the history as cli:adjust and an event of source cli, with the reason', async (t) => {
      const db = await createTestDatabase(backend, t);
      const url = db.databaseUrl;
      assert.equal((await run(url, 'pets', 'add', '--pet-id', String(TWO_53_PLUS_1), '--status', 'available', '--quantity', '5')).code, 0);
      assert.equal((await run(url, 'pets', 'add', '--pet-id', String(TWO_53_PLUS_1 - 1n), '--status', 'available', '--quantity', '5')).code, 0);

      const sold = await run(url, 'pets', 'adjust', String(TWO_53_PLUS_1), '--delta', '-2', '--reason', 'sold');
      assert.equal(sold.code, 0, sold.err);
      assert.equal(sold.out, '{"petId":9007199254740993,"quantity":3,"status":"available"}\n');
      assert.equal(sold.err, 'Pet 9007199254740993: 5 -> 3 (-2, sold).\n');
      const received = await run(url, 'pets', 'adjust', String(TWO_53_PLUS_1), '--delta=+4');
      assert.equal(received.code, 0, received.err);
      assert.equal(received.out, '{"petId":9007199254740993,"quantity":7,"status":"available"}\n');
      assert.equal(received.err, 'Pet 9007199254740993: 3 -> 7 (+4).\n');

      const store = await openStore(url);
      t.after(() => store.close());
      assert.deepEqual((await store.entries.listInventory()).map((i) => [i.petId, i.quantity]), [[TWO_53_PLUS_1 - 1n, 5], [TWO_53_PLUS_1, 7]], 'the neighbour is untouched');
      const rows = (await store.history.listHistory(TWO_53_PLUS_1, { limit: 10 }))!;
      assert.deepEqual(
        rows.map((r) => [r.previousQuantity, r.quantity, r.keyId, r.keyName, r.reason]),
        [[3, 7, 'cli:adjust', 'adjust', null], [5, 3, 'cli:adjust', 'adjust', 'sold']],
      );
      assert.match(rows[0]!.requestId, /^adjust-[0-9a-f-]{36}$/);
      assert.notEqual(rows[0]!.requestId, rows[1]!.requestId, 'a request id per run');
      // The CLI's change, as every change the CLI makes: source cli, no key id nor request id (the history row keeps them).
      const events = stockEvents((await store.events.readEvents(0, 100)).items).filter((e) => e.type === 'inventory.updated');
      assert.deepEqual(
        events.map((e) => [e.petId, e.previousQuantity, e.quantity, e.version, e.reason, e.source, e.keyId, e.requestId]),
        [[TWO_53_PLUS_1, 5, 3, 2, 'sold', 'cli', null, null], [TWO_53_PLUS_1, 3, 7, 3, null, 'cli', null, null]],
      );
    });

    test('below 0 is refused naming the count on hand, exit 1, nothing changed; an unknown pet exits 1', async (t) => {
      const db = await createTestDatabase(backend, t);
      const url = db.databaseUrl;
      assert.equal((await run(url, 'pets', 'add', '--pet-id', '-5', '--status', 'available', '--quantity', '2')).code, 0);
      assert.equal((await run(url, 'pets', 'add', '--pet-id', '6', '--status', 'available', '--quantity', '2147483640')).code, 0);

      const refused = await run(url, 'pets', 'adjust', '-5', '--delta', '-3', '--reason', 'sold');
      assert.deepEqual([refused.code, refused.out], [1, '']);
      assert.equal(refused.err, 'petstore-inventory: pet -5 has 2 in stock: --delta -3 would take it below 0; nothing was changed\n');
      const above = await run(url, 'pets', 'adjust', '6', '--delta', '8');
      assert.deepEqual([above.code, above.out], [1, '']);
      assert.equal(above.err, 'petstore-inventory: pet 6 has 2147483640 in stock: --delta 8 would take it above 2147483647; nothing was changed\n');
      const unknown = await run(url, 'pets', 'adjust', '7', '--delta', '1');
      assert.deepEqual([unknown.code, unknown.out, unknown.err], [1, '', 'petstore-inventory: pet 7 has no inventory entry\n']);

      const store = await openStore(url);
      t.after(() => store.close());
      assert.deepEqual((await store.entries.listInventory()).map((i) => [i.petId, i.quantity]), [[-5n, 2], [6n, 2147483640]]);
      assert.deepEqual(await store.history.listHistory(-5n, { limit: 10 }), [], 'no history row for a refusal');
      assert.deepEqual((await store.events.readEvents(0, 100)).items.filter((e) => e.type === 'inventory.updated'), [], 'no event for a refusal');

      // Exactly down to 0 is allowed.
      const last = await run(url, 'pets', 'adjust', '-5', '--delta', '-2', '--reason', 'damaged');
      assert.equal(last.code, 0, last.err);
      assert.equal(last.out, '{"petId":-5,"quantity":0,"status":"available"}\n');
    });

    test('a bad call exits 2 and says why; --help shows the usage', async (t) => {
      const db = await createTestDatabase(backend, t);
      assert.equal((await run(db.databaseUrl, 'pets', 'add', '--pet-id', '1', '--status', 'available', '--quantity', '3')).code, 0);
      const cases: [string[], RegExp][] = [
        [['1'], /^petstore-inventory: pets adjust needs --delta N/],
        [['--delta', '1'], /exactly one pet ID/],
        [['1', '2', '--delta', '1'], /exactly one pet ID/],
        [['01', '--delta', '1'], /pet ID must be an int64/],
        [['1', '--delta', '0'], /^petstore-inventory: --delta must be a non-zero integer from -2147483647 to 2147483647 \(got "0"\)\n$/],
        [['1', '--delta', '1.5'], /--delta must be a non-zero integer .*\(got "1\.5"\)/],
        [['1', '--delta', '2147483648'], /--delta must be a non-zero integer/],
        [['1', '--delta', '-1', '--reason', 'stolen'], /^petstore-inventory: --reason must be one of received, returned, correction, sold, damaged \(got "stolen"\)\n$/],
        [['1', '--delta', '1', '--quantity', '3'], /Unknown option '--quantity'/],
      ];
      for (const [args, message] of cases) {
        const r = await run(db.databaseUrl, 'pets', 'adjust', ...args);
        assert.equal(r.code, 2, `${args.join(' ')}: ${r.err}`);
        assert.equal(r.out, '');
        assert.match(r.err, message, args.join(' '));
      }
      const help = await run(db.databaseUrl, 'pets', 'adjust', '--help');
      assert.equal(help.code, 0);
      assert.match(help.out, /^Usage: petstore-inventory pets adjust ID --delta N \[--reason REASON\]\n/);
      assert.match(help.out, /--reason REASON {2}why the count changed: received, returned, correction, sold, damaged/);
      assert.match((await run(db.databaseUrl, 'pets', '--help')).out, /adjust +move one pet's count by a number, up or down/);
      const store = await openStore(db.databaseUrl);
      t.after(() => store.close());
      assert.deepEqual(await store.history.listHistory(1n, { limit: 10 }), [], 'no bad call changed anything');
    });
  });
}

test('pets adjust never creates a store: where there is none it says so and exits 1', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'adjust-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const file = join(dir, 'inventory.db');
  const r = await run(`sqlite:${file}`, 'pets', 'adjust', '1', '--delta', '1');
  assert.deepEqual([r.code, r.out], [1, '']);
  assert.match(r.err, /^petstore-inventory: no store at /);
  assert.equal(existsSync(file), false);
});
