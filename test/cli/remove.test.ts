import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { openStore } from '../../src/store/open.js';
import { BACKENDS, backendSkip, createTestDatabase } from '../support/backends.js';
import { change } from '../support/store.js';
import { runOn as run } from '../support/cli.js';

const TWO_53_PLUS_1 = 9007199254740993n;


for (const backend of BACKENDS) {
  describe(`pets remove on ${backend}`, { skip: await backendSkip(backend) }, () => {
    test('refuses an entry in stock unless --force; a retired entry leaves the list, keeps its history, and pets add revives it', async (t) => {
      const db = await createTestDatabase(backend, t);
      const url = db.databaseUrl;
      assert.equal((await run(url, 'pets', 'add', '--pet-id', String(TWO_53_PLUS_1), '--status', 'sold', '--quantity', '2')).code, 0);
      assert.equal((await run(url, 'pets', 'add', '--pet-id', '1', '--status', 'available')).code, 0);
      const store = await openStore(url);
      await store.changes.applyChange(change(TWO_53_PLUS_1, 3, { keyName: 'till', keyId: 'key_t', requestId: 'r-1' }));
      await store.close();

      const refused = await run(url, 'pets', 'remove', String(TWO_53_PLUS_1));
      assert.deepEqual([refused.code, refused.out], [1, '']);
      assert.match(refused.err, /^petstore-inventory: pet 9007199254740993 still has 3 in stock; nothing was changed \(--force retires it anyway\)\n$/);

      const forced = await run(url, 'pets', 'remove', String(TWO_53_PLUS_1), '--force');
      assert.equal(forced.code, 0, forced.err);
      assert.equal(forced.out, '{"petId":9007199254740993,"quantity":3,"status":"sold"}\n');
      assert.match(forced.err, /Retired pet 9007199254740993; its history stays readable/);
      const empty = await run(url, 'pets', 'remove', '1');
      assert.equal(empty.code, 0, 'no stock: no --force needed');

      assert.equal((await run(url, 'pets', 'list', '--json')).out, '[]\n');
      const history = await run(url, 'pets', 'history', String(TWO_53_PLUS_1), '--json');
      assert.equal(history.code, 0, history.err);
      assert.match(history.out, /^\{"items":\[\{"petId":9007199254740993,"previousQuantity":2,"quantity":3,.*"requestId":"r-1"/);
      assert.match((await run(url, 'pets', 'remove', String(TWO_53_PLUS_1))).err, /pet 9007199254740993 has no inventory entry/);

      const revived = await run(url, 'pets', 'add', '--pet-id', String(TWO_53_PLUS_1), '--status', 'available', '--quantity', '7');
      assert.equal(revived.code, 0, revived.err);
      assert.equal((await run(url, 'pets', 'list', '--json')).out, '[{"petId":9007199254740993,"quantity":7,"status":"available"}]\n');
    });

    test('a bad call exits 2; an unknown pet exits 1', async (t) => {
      const db = await createTestDatabase(backend, t);
      // A store that exists (pets remove never creates one), without pet 5.
      assert.equal((await run(db.databaseUrl, 'pets', 'add', '--pet-id', '1', '--status', 'available')).code, 0);
      const cases: [string[], number, RegExp][] = [
        [['5'], 1, /pet 5 has no inventory entry/],
        [['+5'], 2, /pet ID must be an int64/],
        [[], 2, /exactly one pet ID/],
        [['5', '6'], 2, /exactly one pet ID/],
        [['5', '--forse'], 2, /Unknown option '--forse'/],
      ];
      for (const [args, code, message] of cases) {
        const r = await run(db.databaseUrl, 'pets', 'remove', ...args);
        assert.equal(r.code, code, `${args.join(' ')}: ${r.err}`);
        assert.equal(r.out, '');
        assert.match(r.err, message);
      }
      assert.match((await run(db.databaseUrl, 'pets', 'remove', '--help')).out, /^Usage: petstore-inventory pets remove ID \[--force\]/);
    });
  });
}
