import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import { LINE_EVERY_MS, progressBar, progressLine } from '../../../src/cli/import/progress.js';
import type { CliIO } from '../../../src/cli/io.js';
import { openStore } from '../../../src/store/open.js';
import { IMPORT_CHUNK } from '../../../src/store/sqlite/import.js';
import { BACKENDS, backendSkip, createTestDatabase } from '../../support/backends.js';
import { tempDir } from '../../support/process.js';
import { change } from '../../support/store.js';
import { runCliWith, withoutProgress, type Run } from '../../support/cli.js';


function run(databaseUrl: string, argv: string[], io: Partial<CliIO> = {}): Promise<Run> {
  return runCliWith({ DATABASE_URL: databaseUrl }, argv, io);
}

/** A database with pets 1 (5, available, changed once by a PATCH), 2 (3, pending) and 3 (0, sold, retired). */
async function stocked(t: TestContext, backend: (typeof BACKENDS)[number]): Promise<string> {
  const db = await createTestDatabase(backend, t);
  const store = await openStore(db.databaseUrl);
  try {
    await store.changes.addItems([
      { petId: 1n, quantity: 4, status: 'available' },
      { petId: 2n, quantity: 3, status: 'pending' },
      { petId: 3n, quantity: 0, status: 'sold' },
    ]);
    await store.changes.applyChange(change(1n, 5, { keyName: 'till', keyId: 'key_t', requestId: 'r-1' }));
    await store.changes.retireEntry(3n, { force: false, at: new Date() });
  } finally {
    await store.close();
  }
  return db.databaseUrl;
}

function file(t: TestContext, name: string, text: string): string {
  const path = join(tempDir(t), name);
  writeFileSync(path, text);
  return path;
}

for (const backend of BACKENDS) {
  describe(`pets import on ${backend}`, { skip: await backendSkip(backend) }, () => {
    test('--upsert sets the file quantity, writes each change to the history (correction, key "import") and nothing for the same quantity', async (t) => {
      const url = await stocked(t, backend);
      const csv = file(t, 'count.csv', 'petId,quantity,status\n1,9,available\n2,3,pending\n3,7,available\n4,1,sold\n');
      const r = await run(url, ['pets', 'import', '--upsert', csv]);
      assert.equal(r.code, 0, r.err);
      assert.match(r.out, /^read 4, created 2, updated 1, unchanged 1, rejected 0 in \d+\.\d\d s \([\d,]+ rows\/s\)\n$/);
      // Off a terminal a progress line comes every LINE_EVERY_MS: none for an import that took less, by its own clock.
      const seconds = Number(/ in (\d+\.\d\d) s /.exec(r.out)![1]);
      assert.equal(seconds < LINE_EVERY_MS / 1000 ? r.err : withoutProgress(r.err), '', 'a short import prints no progress off a terminal');
      assert.equal(
        (await run(url, ['pets', 'list', '--json'])).out,
        '[{"petId":1,"quantity":9,"status":"available"},{"petId":2,"quantity":3,"status":"pending"},' +
          '{"petId":3,"quantity":7,"status":"available"},{"petId":4,"quantity":1,"status":"sold"}]\n',
      );
      const { items: history } = JSON.parse((await run(url, ['pets', 'history', '1', '--json'])).out) as { items: Record<string, unknown>[] };
      assert.deepEqual(
        history.map(({ previousQuantity, quantity, keyId, keyName, reason }) => ({ previousQuantity, quantity, keyId, keyName, reason })),
        [
          { previousQuantity: 5, quantity: 9, keyId: 'cli:import', keyName: 'import', reason: 'correction' },
          { previousQuantity: 4, quantity: 5, keyId: 'key_t', keyName: 'till', reason: null },
        ],
      );
      assert.match(String(history[0]!.requestId), /^import-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      assert.equal((await run(url, ['pets', 'history', '2', '--json'])).out, '{"items":[],"nextCursor":null}\n', 'unchanged: no history row');
      assert.equal((await run(url, ['pets', 'history', '3', '--json'])).out, '{"items":[],"nextCursor":null}\n', 'revived: a creation, no history row');
    });

    test('--upsert refuses, by line, an entry whose stored status differs, and then imports nothing (decisions 5.8)', async (t) => {
      const url = await stocked(t, backend);
      const json = file(t, 'count.json', '[\n{"petId": 1, "quantity": 9, "status": "available"},\n{"petId": 2, "quantity": 8, "status": "sold"},\n{"petId": 5, "quantity": 1, "status": "sold"}\n]\n');
      const r = await run(url, ['pets', 'import', '--upsert', json]);
      assert.equal(r.code, 1);
      assert.match(r.out, /^read 3, created 0, updated 0, unchanged 0, rejected 1 in /);
      assert.equal(
        withoutProgress(r.err),
        'item 2 (line 3): pet 2 is pending in the store, not sold: an import never changes a status\n' +
          `petstore-inventory: ${json}: 1 entry refused (listed above); nothing was imported\n`,
      );
      assert.deepEqual(JSON.parse((await run(url, ['pets', 'list', '--json'])).out), [
        { petId: 1, quantity: 5, status: 'available' },
        { petId: 2, quantity: 3, status: 'pending' },
      ]);
    });

    test("the reader's problems and the store's are listed together, in file order, at most 20, and all are counted", async (t) => {
      const url = await stocked(t, backend);
      const lines = Array.from({ length: 34 }, (_, i) => (i % 2 === 0 ? `${100 + i},x,sold` : i % 3 === 0 ? '1,1,available' : `${200 + i},1,sold`));
      const r = await run(url, ['pets', 'import', file(t, 'mixed.csv', `petId,quantity,status\n${lines.join('\n')}\n`)]);
      assert.equal(r.code, 1);
      const listed = r.err.trimEnd().split('\n');
      assert.equal(listed.length, 21);
      assert.deepEqual(listed.slice(0, 4), [
        'line 2: quantity must be an integer from 0 to 2147483647 (got "x")',
        'line 4: quantity must be an integer from 0 to 2147483647 (got "x")',
        'line 5: pet 1 already has an inventory entry (--upsert sets the quantity of existing entries)',
        'line 6: quantity must be an integer from 0 to 2147483647 (got "x")',
      ]);
      assert.equal(listed[6], 'line 11: duplicate petId 1, also at line 5');
      // 17 bad quantities; pet 1 six times (there already, then five times again).
      assert.match(listed[20]!, /: 23 entries refused \(the first 20 problems are listed above\); nothing was imported$/);
      assert.match(r.out, /^read 34, created 0, updated 0, unchanged 0, rejected 23 in /);
    });

    test('on a terminal, a progress bar redrawn in place on stderr and cleared at the end', async (t) => {
      const url = await stocked(t, backend);
      const rows = Array.from({ length: 3000 }, (_, i) => `${1000 + i},1,sold`).join('\n');
      const r = await run(url, ['pets', 'import', file(t, 'many.csv', `petId,quantity,status\n${rows}\n`)], { stderrTerminal: { columns: 100 } });
      assert.equal(r.code, 0, r.err);
      // ESC [ K clears the rest of the line.
      const clear = '\x1b[K';
      // How many frames come while reading depends on the machine's speed; every frame is a bar, and the checking one comes.
      const frames = r.err.split('\r').slice(1, -1);
      assert.ok(frames.length > 0 && r.err.startsWith('\r'), JSON.stringify(r.err.slice(0, 80)));
      for (const frame of frames) {
        assert.match(frame, /^\[#*\.*\] +\d+% {2}[\d,]+ rows {2}[\d,]+ rows\/s {2}/);
        assert.ok(frame.endsWith(clear), JSON.stringify(frame));
      }
      assert.ok(frames.some((frame) => frame.includes('checking…')), 'the checking phase is shown');
      assert.ok(r.err.endsWith(`applying…${clear}\r${clear}`), JSON.stringify(r.err.slice(-80)));
      assert.ok(!r.err.includes('\n'), 'one line, redrawn');
      assert.match(r.out, /^read 3,000, created 3,000, /);
    });
  });
}

describe('pets import stopped part way on sqlite (decisions 5.8)', { skip: await backendSkip('sqlite') }, () => {
  test('a chunk that fails after the first: the chunks before it stay, exit 1 says how to finish, and --upsert of the same file writes the rest', async (t) => {
    const db = await createTestDatabase('sqlite', t);
    await (await openStore(db.databaseUrl)).close();
    const rows = IMPORT_CHUNK + 500;
    const csv = file(t, 'stocktake.csv', `petId,quantity,status\n${Array.from({ length: rows }, (_, i) => `${i + 1},2,available`).join('\n')}\n`);
    // The second chunk's transaction fails as a full disk would: SQLite aborts the statement, and the chunk rolls back whole.
    const sqlite = new Database(db.location);
    sqlite.exec(`CREATE TRIGGER stop_the_import BEFORE INSERT ON inventory WHEN NEW.pet_id = ${IMPORT_CHUNK + 3} BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END`);
    const stopped = await run(db.databaseUrl, ['pets', 'import', csv]);
    assert.equal(stopped.code, 1, stopped.err);
    assert.equal(stopped.out, '');
    assert.equal(
      withoutProgress(stopped.err),
      `petstore-inventory: the import stopped part way (database or disk is full): ${IMPORT_CHUNK} entries created and 0 updated before it stay written; ` +
        'import the same file again with --upsert to write the rest\n',
    );
    assert.equal((JSON.parse((await run(db.databaseUrl, ['pets', 'list', '--json'])).out) as unknown[]).length, IMPORT_CHUNK, 'the first chunk stays');

    sqlite.exec('DROP TRIGGER stop_the_import');
    sqlite.close();
    const again = await run(db.databaseUrl, ['pets', 'import', '--upsert', csv]);
    assert.equal(again.code, 0, again.err);
    assert.match(again.out, new RegExp(`^read ${rows.toLocaleString('en-US')}, created 500, updated 0, unchanged ${IMPORT_CHUNK.toLocaleString('en-US')}, rejected 0 in `));
    assert.equal((JSON.parse((await run(db.databaseUrl, ['pets', 'list', '--json'])).out) as unknown[]).length, rows);
  });
});

test('the progress bar and line: share of the file read, rows, rows/s and the time left', () => {
  const sample = { bytes: 250, totalBytes: 1000, rows: 5000, seconds: 2, phase: 'reading' as const };
  assert.equal(progressBar(sample, 80), `[${'#'.repeat(9)}${'.'.repeat(27)}]  25%  5,000 rows  2,500 rows/s  6 s left`);
  assert.equal(progressBar({ ...sample, phase: 'applying' }, 60).length, 59, 'cut to the width of the terminal');
  assert.equal(progressLine(sample), 'import: 25% of 0.0 MB read, 5,000 rows (2,500 rows/s), 6 s left');
  assert.equal(progressLine({ ...sample, bytes: 1000, phase: 'checking' }), 'import: read 5,000 rows (2,500 rows/s); checking them');
  assert.match(progressLine({ ...sample, bytes: 1, seconds: 1 }), /17 min left$/);
});
