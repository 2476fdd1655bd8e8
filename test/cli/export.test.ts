import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import { EXPORT_PAGE } from '../../src/cli/export.js';
import type { InventoryItem } from '../../src/schemas/inventory.js';
import { tempDir } from '../support/process.js';
import { openStore } from '../../src/store/open.js';
import { BACKENDS, backendSkip, createTestDatabase } from '../support/backends.js';
import { runOn as run } from '../support/cli.js';

const ITEMS: InventoryItem[] = [
  { petId: 9223372036854775807n, quantity: 2147483647, status: 'sold' },
  { petId: -9223372036854775808n, quantity: 0, status: 'pending' },
  { petId: 9007199254740993n, quantity: 4, status: 'available' },
  { petId: 5n, quantity: 1, status: 'available' },
];


async function seeded(t: TestContext, backend: (typeof BACKENDS)[number], items: readonly InventoryItem[]): Promise<string> {
  const db = await createTestDatabase(backend, t);
  const store = await openStore(db.databaseUrl);
  try {
    await store.changes.addItems(items);
  } finally {
    await store.close();
  }
  return db.databaseUrl;
}

for (const backend of BACKENDS) {
  describe(`pets export on ${backend}`, { skip: await backendSkip(backend) }, () => {
    test('writes CSV or JSON by petId with exact int64 digits, to standard output or a file, retired entries left out', async (t) => {
      const url = await seeded(t, backend, [...ITEMS, { petId: 6n, quantity: 0, status: 'sold' }]);
      assert.equal((await run(url, 'pets', 'remove', '6')).code, 0);
      const csv = await run(url, 'pets', 'export');
      assert.equal(csv.code, 0, csv.err);
      assert.equal(
        csv.out,
        'petId,quantity,status\n-9223372036854775808,0,pending\n5,1,available\n9007199254740993,4,available\n9223372036854775807,2147483647,sold\n',
      );
      assert.match(csv.err, /^exported 4 entries in \d+\.\d\d s \([\d,-]+ entries\/s\)\n$/);

      const dir = tempDir(t);
      const json = await run(url, 'pets', 'export', join(dir, 'stock.json'));
      assert.equal(json.code, 0, json.err);
      assert.match(json.out, /^exported 4 entries to .*stock\.json in /);
      assert.equal(
        readFileSync(join(dir, 'stock.json'), 'utf8'),
        '[\n{"petId":-9223372036854775808,"quantity":0,"status":"pending"},\n{"petId":5,"quantity":1,"status":"available"},\n' +
          '{"petId":9007199254740993,"quantity":4,"status":"available"},\n{"petId":9223372036854775807,"quantity":2147483647,"status":"sold"}\n]\n',
      );
      assert.equal((await run(url, 'pets', 'export', '--format', 'csv', join(dir, 'stock.json'))).code, 0);
      assert.equal(readFileSync(join(dir, 'stock.json'), 'utf8'), csv.out, '--format wins over the extension; the file is replaced');
    });

    test('an empty catalogue is a header alone, or an empty array', async (t) => {
      const url = await seeded(t, backend, []);
      assert.equal((await run(url, 'pets', 'export')).out, 'petId,quantity,status\n');
      assert.equal((await run(url, 'pets', 'export', '--format', 'json')).out, '[]\n');
    });

    test(`pages of ${EXPORT_PAGE.toLocaleString('en-US')} follow each other without a gap or a repeat`, async (t) => {
      const items = Array.from({ length: EXPORT_PAGE + 1 }, (_, i): InventoryItem => ({ petId: BigInt(i * 3 - 5000), quantity: i, status: 'available' }));
      const url = await seeded(t, backend, items);
      for (const format of ['csv', 'json'] as const) {
        const r = await run(url, 'pets', 'export', '--format', format);
        assert.equal(r.code, 0, r.err);
        const ids = [...r.out.matchAll(format === 'csv' ? /^(-?\d+),/gm : /"petId":(-?\d+)/g)].map((m) => BigInt(m[1]!));
        assert.deepEqual(ids, items.map((i) => i.petId), format);
      }
    });

    test('a bad call exits 2; a file it cannot write exits 1 and leaves nothing behind', async (t) => {
      const url = await seeded(t, backend, ITEMS);
      const dir = tempDir(t);
      const cases: [string[], number, RegExp][] = [
        [['--format', 'xml'], 2, /--format must be one of csv, json \(got "xml"\)/],
        [['a.csv', 'b.csv'], 2, /at most one FILE/],
        [[join(dir, 'missing', 'stock.csv')], 1, /cannot write .*stock\.csv: .*no such file or directory/],
      ];
      for (const [args, code, message] of cases) {
        const r = await run(url, 'pets', 'export', ...args);
        assert.equal(r.code, code, `${args.join(' ')}: ${r.err}`);
        assert.equal(r.out, '');
        assert.match(r.err, message);
      }
      assert.equal(existsSync(join(dir, 'missing')), false);
      assert.match((await run(url, 'pets', 'export', '--help')).out, /^Usage: petstore-inventory pets export \[--format csv\|json\] \[FILE\]/);
    });
  });
}
