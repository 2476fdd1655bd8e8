import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { Worker } from 'node:worker_threads';
import { openSqliteConnection } from '../../../src/store/sqlite/connection.js';
import { inWriteLock } from '../../../src/store/sqlite/write-lock.js';

/**
 * inWriteLock: one IMMEDIATE transaction around a body whose own transactions nest in it, and the
 * write lock taken from another connection that holds it, as soon as that one lets go. How soon is
 * the bench's to measure (the PATCHes answered during an import), not a test's.
 */

function database(t: { after: (fn: () => void) => void }) {
  const dir = mkdtempSync(join(tmpdir(), 'inventory-write-lock-'));
  const file = join(dir, 'store.db');
  const db = openSqliteConnection(file);
  db.exec('CREATE TABLE t (n INTEGER NOT NULL)');
  t.after(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { db, file };
}

test('the body commits with its result; a transaction of its own that throws rolls back alone, as a savepoint', (t) => {
  const { db } = database(t);
  const insert = db.prepare('INSERT INTO t (n) VALUES (?)');
  const nested = db.transaction((n: number) => {
    insert.run(n);
    if (n < 0) throw new Error('refused');
  });
  const result = inWriteLock(db, () => {
    nested.immediate(1);
    assert.throws(() => nested.immediate(-1), /refused/);
    nested(2);
    return 'done';
  });
  assert.equal(result, 'done');
  assert.equal(db.inTransaction, false);
  assert.deepEqual(db.prepare('SELECT n FROM t ORDER BY n').pluck().all(), [1, 2]);
});

test('a body that throws writes nothing, leaves no transaction open, and its error goes on', (t) => {
  const { db } = database(t);
  assert.throws(
    () =>
      inWriteLock(db, () => {
        db.prepare('INSERT INTO t (n) VALUES (1)').run();
        throw new Error('the disk is full');
      }),
    /the disk is full/,
  );
  assert.equal(db.inTransaction, false);
  assert.equal(db.prepare('SELECT count(*) FROM t').pluck().get(), 0);
  // The connection writes again afterwards, and waits as SQLite's busy handler would (the timeout restored).
  inWriteLock(db, () => db.prepare('INSERT INTO t (n) VALUES (2)').run());
  assert.equal(db.prepare('PRAGMA busy_timeout').pluck().get(), 5000);
});

test('while another connection holds the write lock, the body waits for it to commit, then runs after that commit', async (t) => {
  const { db, file } = database(t);
  // Another thread takes the lock, writes, says so, and commits a moment later.
  const holder = new Worker(
    `const { parentPort, workerData } = require('node:worker_threads');
     const Database = require(workerData.driver);
     const db = new Database(workerData.file);
     db.exec('BEGIN IMMEDIATE');
     db.prepare('INSERT INTO t (n) VALUES (7)').run();
     parentPort.postMessage('holding');
     Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 300);
     db.exec('COMMIT');
     db.close();`,
    { eval: true, workerData: { file, driver: createRequire(import.meta.url).resolve('better-sqlite3') } },
  );
  t.after(() => holder.terminate());
  const exited = new Promise((resolve) => holder.once('exit', resolve));
  await new Promise((resolve, reject) => {
    holder.once('message', resolve);
    holder.once('error', reject);
  });
  const seen = inWriteLock(db, () => {
    db.prepare('INSERT INTO t (n) VALUES (8)').run();
    return db.prepare('SELECT n FROM t ORDER BY rowid').pluck().all();
  });
  assert.deepEqual(seen, [7, 8], "the holder's row was committed before the body ran");
  await exited;
});
