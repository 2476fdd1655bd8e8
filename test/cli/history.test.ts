import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { answerListHistory } from '../../src/operations/list-history.js';
import { openStore } from '../../src/store/open.js';
import { BACKENDS, backendSkip, createTestDatabase } from '../support/backends.js';
import { change } from '../support/store.js';
import { runOn as run } from '../support/cli.js';

const INT64_MAX = 9223372036854775807n;


for (const backend of BACKENDS) {
  describe(`pets history on ${backend}`, { skip: await backendSkip(backend) }, () => {
    test('lists the changes newest first, as a table or as the API\'s JSON items with exact int64 ids', async (t) => {
      const db = await createTestDatabase(backend, t);
      assert.equal((await run(db.databaseUrl, 'pets', 'add', '--pet-id', String(INT64_MAX), '--status', 'available')).code, 0);
      const empty = await run(db.databaseUrl, 'pets', 'history', String(INT64_MAX));
      assert.deepEqual([empty.code, empty.out], [0, `No changes of pet ${INT64_MAX} yet.\n`]);
      const store = await openStore(db.databaseUrl);
      await store.changes.applyChange(change(INT64_MAX, 4, { keyName: 'warehouse', keyId: 'key_w', requestId: 'r-1', reason: 'received', at: new Date('2026-01-02T03:04:05.000Z') }));
      await store.changes.applyChange(change(INT64_MAX, 3, { keyName: 'till', keyId: 'key_t', requestId: 'r-2' }));
      await store.close();

      const table = await run(db.databaseUrl, 'pets', 'history', String(INT64_MAX));
      assert.equal(table.code, 0, table.err);
      const lines = table.out.trimEnd().split('\n');
      assert.match(lines[0]!, /^AT\s+FROM\s+TO\s+REASON\s+KEY\s+REQUEST$/);
      assert.match(lines[1]!, /\s4\s+3\s+-\s+till \(key_t\)\s+r-2$/);
      assert.match(lines[2]!, /^2026-01-02T03:04:05.000Z\s+0\s+4\s+received\s+warehouse \(key_w\)\s+r-1$/);

      const json = await run(db.databaseUrl, 'pets', 'history', String(INT64_MAX), '--json', '--limit', '1');
      assert.equal(json.code, 0, json.err);
      assert.match(
        json.out,
        new RegExp(`^\\{"items":\\[\\{"petId":${INT64_MAX},"previousQuantity":4,"quantity":3,"at":"[^"]+","keyId":"key_t","keyName":"till","requestId":"r-2","reason":null\\}\\],"nextCursor":"h\\d+"\\}\\n$`),
      );
    });

    test('--json prints what the API answers, page by page: same items, same nextCursor, and --cursor takes it', async (t) => {
      const db = await createTestDatabase(backend, t);
      const store = await db.open();
      await store.changes.addItems([{ petId: -5n, quantity: 0, status: 'available' }, { petId: 6n, quantity: 0, status: 'sold' }]);
      for (let quantity = 1; quantity <= 5; quantity++) {
        await store.changes.applyChange(change(-5n, quantity, { reason: quantity % 2 ? 'received' : null, requestId: `r-${quantity}` }));
        await store.changes.applyChange(change(6n, quantity));
      }
      let cursor: string | undefined;
      const seen: number[] = [];
      do {
        const query = { limit: '2', ...(cursor !== undefined && { cursor }) };
        const api = await answerListHistory(store.history, { petId: -5n, query });
        const cli = await run(db.databaseUrl, 'pets', 'history', '-5', '--json', '--limit', '2', ...(cursor === undefined ? [] : ['--cursor', cursor]));
        assert.deepEqual(cli, { code: 0, out: `${String(api.body)}\n`, err: '' }, `page after ${cursor}`);
        const page = JSON.parse(cli.out) as { items: { quantity: number }[]; nextCursor: string | null };
        seen.push(...page.items.map((i) => i.quantity));
        cursor = page.nextCursor ?? undefined;
      } while (cursor !== undefined);
      assert.deepEqual(seen, [5, 4, 3, 2, 1]);

      const table = await run(db.databaseUrl, 'pets', 'history', '-5', '--limit', '2');
      const next = /^Older changes: --cursor (h\d+)\n$/m.exec(table.out)?.[1];
      assert.ok(next, table.out);
      assert.match((await run(db.databaseUrl, 'pets', 'history', '-5', '--limit', '2', '--cursor', next)).out, /\br-3\n[^\n]*\br-2\nOlder changes: --cursor h\d+\n$/);

      for (const bad of ['x', 'h0', 'h012', 'h9223372036854775808', '']) {
        const r = await run(db.databaseUrl, 'pets', 'history', '-5', '--cursor', bad);
        assert.deepEqual([r.code, r.out], [2, ''], bad);
        assert.match(r.err, /^petstore-inventory: --cursor must be the nextCursor of a page, unchanged \(got ".*"\)\n$/, bad);
        await assert.rejects(answerListHistory(store.history, { petId: -5n, query: { cursor: bad } }), { code: 'invalid_parameter' }, `the API refuses ${bad} too`);
      }
    });

    test('fails with a message and a non-zero exit for an unknown pet, a bad id, a bad --limit or no id', async (t) => {
      const db = await createTestDatabase(backend, t);
      // An empty store: on none at all, pets history fails before it looks at the pet.
      await db.open();
      const cases: [string[], number, RegExp][] = [
        [['5'], 1, /pet 5 has no inventory entry/],
        [['05'], 2, /pet ID must be an int64/],
        [['5', '--limit', '0'], 2, /--limit must be a whole number from 1/],
        [[], 2, /exactly one pet ID/],
      ];
      for (const [args, code, message] of cases) {
        const r = await run(db.databaseUrl, 'pets', 'history', ...args);
        assert.equal(r.code, code, `${args.join(' ')}: ${r.err}`);
        assert.equal(r.out, '');
        assert.match(r.err, message);
      }
      assert.match((await run(db.databaseUrl, 'pets', 'history', '--help')).out, /^Usage: petstore-inventory pets history ID/);
    });
  });
}
