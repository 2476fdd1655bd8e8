import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import { openStore } from '../../../src/store/open.js';
import { IMPORT_CHUNK } from '../../../src/store/sqlite/import.js';
import { BACKENDS, backendSkip, createTestDatabase, type TestDatabase } from '../../support/backends.js';
import { writeCatalogue } from '../../support/catalogue-files.js';
import { runOn } from '../../support/cli.js';
import { heldSession, waitingOn } from '../../support/pg-session.js';
import { BIN, sleep, tempDir } from '../../support/process.js';

/**
 * `pets import` ended from outside while it writes: Ctrl-C on the terminal (SIGINT) or the process
 * killed (SIGKILL), with no chance to clean up. The store is left as the import's help promises
 * (decisions 5.8): on SQLite the chunks committed before the signal stay, whole, with their events,
 * and nothing of the chunk under way; on PostgreSQL, one transaction, all or nothing. Either way the
 * same file again with --upsert writes the rest, and each entry ends with exactly one creation event.
 */

/** Chunks enough that the writing takes a while (the signal lands after the first and before the last), few enough to keep the suite short. */
const ROWS = 6 * IMPORT_CHUNK;
/** How often the test looks for the import at its stop point. */
const POLL_MS = 2;
/** The longest the test waits for the import to reach the point where it is stopped. */
const REACH_MS = 120_000;

const count = (n: number) => n.toLocaleString('en-US');

/** The store as the test reads it, outside the CLI: entries, creation events (in all, and of distinct pets), the events head. */
async function written(db: TestDatabase): Promise<{ entries: number; created: number; createdPets: number; head: number; lastSeq: number }> {
  const [row] = await db.sql<Record<string, unknown>>(
    `SELECT (SELECT count(*) FROM inventory) AS entries,
            (SELECT count(*) FROM inventory_events WHERE type = 'inventory.created') AS created,
            (SELECT count(DISTINCT pet_id) FROM inventory_events WHERE type = 'inventory.created') AS created_pets,
            (SELECT events_head FROM store_state) AS head,
            (SELECT coalesce(max(seq), 0) FROM inventory_events) AS last_seq`,
  );
  const n = (key: string) => Number(row![key]);
  return { entries: n('entries'), created: n('created'), createdPets: n('created_pets'), head: n('head'), lastSeq: n('last_seq') };
}

/** The point at which the test stops the import, and what the test does once it has. */
interface StopPoint {
  /** Whether the import is there. */
  reached(): Promise<boolean>;
  /** Lets go of whatever held the import there (after the signal). */
  release(): Promise<void>;
}

/**
 * Where the import is stopped. On SQLite, once a chunk is committed (a chunk takes long enough that
 * polling finds the import between its first and last). On PostgreSQL the whole write is one
 * transaction, too short to be found by polling on a loaded machine: the test holds store_state's
 * row, which every write locks last, so the import waits at its last statement, every row written
 * and nothing committed, until the test lets go.
 */
async function stopPoint(db: TestDatabase, t: TestContext): Promise<StopPoint> {
  if (db.backend === 'sqlite') return { reached: async () => (await written(db)).entries > 0, release: async () => {} };
  const held = await heldSession(db.location, t);
  await held.query('BEGIN');
  await held.query('SELECT 1 FROM store_state WHERE id = 1 FOR UPDATE');
  return {
    async reached() {
      const [waiting, ...more] = await waitingOn(held.pid);
      if (waiting === undefined) return false;
      assert.equal(more.length, 0, 'only the import waits');
      assert.match(waiting, /^WITH s AS \(UPDATE store_state /, 'the import waits at its last statement, the bump of store_state');
      return true;
    },
    release: async () => void (await held.query('ROLLBACK')),
  };
}

for (const backend of BACKENDS) {
  describe(`pets import stopped by a signal on ${backend} (decisions 5.8)`, { skip: await backendSkip(backend) }, () => {
    for (const signal of ['SIGINT', 'SIGKILL'] as const) {
      test(`${signal} while it writes: ${backend === 'sqlite' ? 'the whole chunks before it stay' : 'nothing stays'}, and --upsert of the same file writes the rest`, { timeout: 300_000 }, async (t) => {
        const db = await createTestDatabase(backend, t);
        await (await openStore(db.databaseUrl)).close();
        const stop = await stopPoint(db, t);
        const file = join(tempDir(t), 'stocktake.csv');
        await writeCatalogue(file, Array.from({ length: ROWS }, (_, i) => ({ petId: BigInt(i + 1), quantity: 2, status: 'available' as const })), 'csv');

        const child = spawn(BIN, ['pets', 'import', file], { env: { ...process.env, DATABASE_URL: db.databaseUrl }, stdio: ['ignore', 'pipe', 'pipe'] });
        let output = '';
        for (const stream of [child.stdout, child.stderr]) stream.on('data', (chunk: Buffer) => (output += chunk.toString()));
        const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
        let ended = false;
        void exited.then(() => (ended = true));
        const deadline = Date.now() + REACH_MS;
        while (!ended && !(await stop.reached())) {
          if (Date.now() > deadline) {
            child.kill('SIGKILL');
            assert.fail(`the import did not begin to write within ${REACH_MS / 1000} s:\n${output}`);
          }
          await sleep(POLL_MS);
        }
        assert.equal(ended, false, `the import ended before the test could stop it:\n${output}`);
        child.kill(signal);
        const [code, by] = await exited;
        await stop.release();
        assert.deepEqual({ code, by }, { code: null, by: signal }, `the import died of the signal:\n${output}`);

        const left = await written(db);
        if (backend === 'sqlite') {
          assert.ok(left.entries > 0 && left.entries < ROWS, `stopped part way: ${left.entries} of ${ROWS} entries written`);
          assert.equal(left.entries % IMPORT_CHUNK, 0, `only whole chunks stay: ${left.entries} entries`);
          const [check] = await db.sql<{ integrity_check: string }>('PRAGMA integrity_check');
          assert.equal(check!.integrity_check, 'ok');
        } else {
          assert.ok(left.entries === 0 || left.entries === ROWS, `all or nothing: ${left.entries} of ${ROWS} entries written`);
        }
        assert.deepEqual(
          { created: left.created, createdPets: left.createdPets, head: left.head },
          { created: left.entries, createdPets: left.entries, head: left.lastSeq },
          'one creation event per entry written, and the events head on the last of them',
        );

        const again = await runOn(db.databaseUrl, 'pets', 'import', '--upsert', file);
        assert.equal(again.code, 0, again.err);
        assert.match(again.out, new RegExp(`^read ${count(ROWS)}, created ${count(ROWS - left.entries)}, updated 0, unchanged ${count(left.entries)}, rejected 0 in `));
        const done = await written(db);
        assert.deepEqual(
          { entries: done.entries, created: done.created, createdPets: done.createdPets, head: done.head },
          { entries: ROWS, created: ROWS, createdPets: ROWS, head: done.lastSeq },
          'every entry once, each with one creation event',
        );
        t.diagnostic(`${backend}, ${signal}: ${count(left.entries)} of ${count(ROWS)} entries stayed; --upsert wrote the rest (${again.out.trim()})`);
      });
    }
  });
}
