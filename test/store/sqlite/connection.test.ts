import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { LIMIT, openSqliteConnection, PAGE_SIZE } from '../../../src/store/sqlite/connection.js';
import { tempDir } from '../../support/process.js';

const CHURN = resolve(import.meta.dirname, '..', '..', 'fixtures', 'sqlite-churn.ts');

// Node 24.19+ aborts when V8 collects a better-sqlite3 object at the wrong moment; the store keeps them all (src/store/sqlite/connection.ts).
test('stores opened, used and closed while the collector runs often: the process survives', (t) => {
  const run = spawnSync(process.execPath, ['--max-semi-space-size=1', '--import', 'tsx', CHURN, tempDir(t)], { encoding: 'utf8', timeout: 120_000 });
  assert.equal(run.signal, null, `killed by ${run.signal}: ${run.stderr}`);
  assert.equal(run.status, 0, run.stderr);
  assert.match(run.stdout, /^ok /);
});

test('a new database gets the store page size; one that exists keeps its own', (t) => {
  const dir = tempDir(t);
  const created = openSqliteConnection(join(dir, 'new.db'));
  created.exec('CREATE TABLE t (x INTEGER)');
  assert.equal(created.pragma('page_size', { simple: true }), PAGE_SIZE);
  assert.equal(created.pragma('journal_mode', { simple: true }), 'wal');
  created.close();

  const older = new Database(join(dir, 'old.db'));
  older.exec('PRAGMA page_size = 4096; CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1)');
  older.close();
  const reopened = openSqliteConnection(join(dir, 'old.db'));
  assert.equal(reopened.pragma('page_size', { simple: true }), 4096);
  assert.equal(reopened.pragma('journal_mode', { simple: true }), 'wal');
  assert.equal(reopened.prepare('SELECT x FROM t').pluck().get(), 1);
  reopened.close();
});

// A bare bound LIMIT makes SQLite compile the statement again at every call (src/store/sqlite/connection.ts, LIMIT):
// the store's connections refuse to prepare one, whatever its form, and the form they take still limits.
test('a connection of the store refuses a bare bound LIMIT; the one it binds still limits', (t) => {
  const db = openSqliteConnection(join(tempDir(t), 'limit.db'));
  db.exec('CREATE TABLE t (x INTEGER PRIMARY KEY); INSERT INTO t VALUES (1), (2), (3), (4)');
  for (const bare of ['LIMIT ?', 'LIMIT ?1', 'limit :n', 'LIMIT\n  @n', 'LIMIT $n', 'LIMIT 2 OFFSET ?']) {
    assert.throws(() => db.prepare(`SELECT x FROM t ORDER BY x ${bare}`), /a bound LIMIT is written LIMIT \(\? \+ 0\)/, bare);
  }
  // A constant limit, and a column or table whose name merely starts like a parameter, are not bound limits.
  assert.deepEqual(db.prepare('SELECT x FROM t ORDER BY x LIMIT 2').pluck().all(), [1, 2]);
  assert.deepEqual(db.prepare('SELECT x AS limit_x FROM t WHERE x = ?').pluck().all(3), [3]);
  const page = db.prepare(`SELECT x FROM t WHERE x > ? ORDER BY x LIMIT ${LIMIT}`).pluck();
  assert.deepEqual(page.all(0, 2), [1, 2]);
  assert.deepEqual(page.all(1, 3), [2, 3, 4]);
  assert.deepEqual(page.all(4, 2), []);
  db.close();
});
