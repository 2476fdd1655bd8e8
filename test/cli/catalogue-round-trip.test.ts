import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { promisify } from 'node:util';
import { IMPORT_BATCH } from '../../src/cli/import/batches.js';
import { BACKENDS, backendSkip, createTestDatabase } from '../support/backends.js';
import { catalogueItems, writeCatalogue } from '../support/catalogue-files.js';
import { byScale } from '../support/scale.js';
import { BIN, tempDir } from '../support/process.js';

const run = promisify(execFile);

/** Entries of the round trip: past a batch in `npm test`, a million in `npm run test:catalogue`. */
const ENTRIES = byScale(Math.round(IMPORT_BATCH * 1.5), 1_000_000);

/** The CLI as deployed, its peak RSS printed at exit by a preload of the test's own. */
async function cli(databaseUrl: string, ...args: string[]): Promise<{ code: number; out: string; err: string; peakMiB: number }> {
  const report = `process.on('exit', () => process.stderr.write('peak-rss-kib ' + process.resourceUsage().maxRSS + '\\n'))`;
  const env = { ...process.env, DATABASE_URL: databaseUrl, NODE_OPTIONS: `--import=data:text/javascript,${encodeURIComponent(report)}` };
  try {
    const { stdout, stderr } = await run(BIN, args, { env, maxBuffer: 16 * 1024 * 1024 });
    return { code: 0, out: stdout, err: stderr, peakMiB: peakOf(stderr) };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, out: e.stdout, err: e.stderr, peakMiB: peakOf(e.stderr) };
  }
}

/** The process's peak: the largest a thread reported (the preload runs in the SQLite writer thread too). */
function peakOf(stderr: string): number {
  return Math.max(...[...stderr.matchAll(/peak-rss-kib (\d+)/g)].map((m) => Number(m[1]) / 1024));
}

/** The same bytes, told apart by where they first differ rather than by a diff of megabytes. */
function assertSameBytes(actual: Buffer, expected: Buffer, what: string): void {
  if (actual.equals(expected)) return;
  let at = 0;
  while (at < actual.length && actual[at] === expected[at]) at++;
  assert.fail(`${what}: ${actual.length} bytes against ${expected.length}, first difference at byte ${at}: ` +
    `${JSON.stringify(actual.subarray(at, at + 60).toString())} against ${JSON.stringify(expected.subarray(at, at + 60).toString())}`);
}

for (const backend of BACKENDS) {
  describe(`the catalogue round trip of ${ENTRIES.toLocaleString('en-US')} entries on ${backend}`, { skip: await backendSkip(backend) }, () => {
    test('import, export and compare the bytes, in CSV and in JSON; an upsert; a bad row in the middle imports nothing', async (t) => {
      const dir = tempDir(t);
      const items = catalogueItems(ENTRIES);
      const file = (name: string) => join(dir, name);
      await writeCatalogue(file('in.csv'), items, 'csv');
      await writeCatalogue(file('in.json'), items, 'json');

      for (const format of ['csv', 'json'] as const) {
        const db = await createTestDatabase(backend, t);
        const imported = await cli(db.databaseUrl, 'pets', 'import', file(`in.${format}`));
        assert.equal(imported.code, 0, imported.err);
        const n = ENTRIES.toLocaleString('en-US');
        assert.match(imported.out, new RegExp(`^read ${n}, created ${n}, updated 0, unchanged 0, rejected 0 in `));
        t.diagnostic(`${format}: ${statSync(file(`in.${format}`)).size.toLocaleString('en-US')} bytes; ${imported.out.trim()}; peak RSS ${imported.peakMiB.toFixed(0)} MiB`);
        for (const out of ['csv', 'json'] as const) {
          const exported = await cli(db.databaseUrl, 'pets', 'export', file(`out.${out}`));
          assert.equal(exported.code, 0, exported.err);
          assertSameBytes(readFileSync(file(`out.${out}`)), readFileSync(file(`in.${out}`)), `${format} imported, ${out} exported`);
        }
        if (format === 'json') continue;

        // A stocktake: every tenth quantity differs; the rest are written nowhere.
        const counted = items.map((item, i) => (i % 10 === 3 ? { ...item, quantity: item.quantity + 1 } : item));
        await writeCatalogue(file('counted.csv'), counted, 'csv');
        const changed = counted.filter((_, i) => i % 10 === 3).length;
        const upsert = await cli(db.databaseUrl, 'pets', 'import', '--upsert', file('counted.csv'));
        assert.equal(upsert.code, 0, upsert.err);
        assert.match(upsert.out, new RegExp(`^read ${n}, created 0, updated ${changed.toLocaleString('en-US')}, unchanged ${(ENTRIES - changed).toLocaleString('en-US')}, rejected 0 in `));
        assert.equal((await cli(db.databaseUrl, 'pets', 'export', file('out.csv'))).code, 0);
        assertSameBytes(readFileSync(file('out.csv')), readFileSync(file('counted.csv')), 'after the upsert');
        const history = await cli(db.databaseUrl, 'pets', 'history', '--json', '--', String(counted[3]!.petId));
        assert.match(history.out, new RegExp(`^\\{"items":\\[\\{"petId":${counted[3]!.petId},"previousQuantity":${items[3]!.quantity},"quantity":${counted[3]!.quantity},.*"keyId":"cli:import","keyName":"import","requestId":"import-[0-9a-f-]{36}","reason":"correction"\\}\\],"nextCursor":null\\}\\n$`));

        // One bad row in the middle, after batches are staged already: nothing at all is applied.
        const lines = readFileSync(file('in.csv'), 'utf8').split('\n');
        const middle = Math.floor(lines.length / 2);
        lines[middle] = lines[middle]!.replace(/,(\d+),/, ',-$1,');
        writeFileSync(file('bad.csv'), lines.join('\n'));
        const bad = await cli(db.databaseUrl, 'pets', 'import', '--upsert', file('bad.csv'));
        assert.equal(bad.code, 1);
        assert.match(bad.err, new RegExp(`^line ${middle + 1}: quantity must be an integer from 0 to 2147483647 \\(got "-\\d+"\\)\\n`, 'm'));
        assert.match(bad.err, /: 1 entry refused \(listed above\); nothing was imported\n/);
        assert.equal((await cli(db.databaseUrl, 'pets', 'export', file('out.csv'))).code, 0);
        assertSameBytes(readFileSync(file('out.csv')), readFileSync(file('counted.csv')), 'after the refused import');
      }
    });
  });
}
