import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BULK_WRITE } from '../../../src/store/store.js';
import { CHANGE_LOG_KEPT, changeLog, changeLogReader, UPDATED_EVENTS } from '../../../src/store/sqlite/change-log.js';
import { openSqliteConnection } from '../../../src/store/sqlite/connection.js';
import { migrate } from '../../../src/store/sqlite/migrations.js';

test('the change log names the pets written since a version, until it cannot: a bulk creation, or rows pruned', (t) => {
  const db = openSqliteConnection(':memory:');
  t.after(() => db.close());
  migrate(db);
  db.exec(`INSERT INTO inventory (pet_id, quantity, status, created_at, updated_at) VALUES (1, 1, 'available', 'x', 'x'), (2, 2, 'sold', 'x', 'x')`);
  const write = (petIds: readonly bigint[] | 'bulk') => changeLog(db).commit(petIds, 0);
  const read = changeLogReader(db, 'pet_id, quantity');
  const version = () => db.prepare('SELECT version FROM store_state').pluck().get() as number;

  write([2n]);
  write([1n, 2n]);
  assert.equal(version(), 2);
  assert.deepEqual(read(1), [[1n, 1n], [2n, 2n]]);
  assert.deepEqual(read(0), [[1n, 1n], [2n, 2n]]);
  assert.deepEqual(read(2), []);

  write(Array.from({ length: BULK_WRITE + 1 }, (_, i) => BigInt(i + 10)));
  assert.equal(read(2), undefined, 'a bulk creation since: read the whole list');
  assert.deepEqual(read(3), []);
  write('bulk');
  assert.equal(read(3), undefined, 'a bulk write names no pets: read the whole list');
  assert.deepEqual(read(4), []);

  // Enough writes to prune: only the last CHANGE_LOG_KEPT versions stay.
  db.transaction(() => {
    for (let i = version(); i < CHANGE_LOG_KEPT + 1000; i++) write([1n]);
  })();
  const rows = db.prepare('SELECT count(*) FROM inventory_changes').pluck().get() as number;
  assert.ok(rows <= CHANGE_LOG_KEPT, `${rows} rows kept`);
  assert.equal(read(6), undefined, 'a version older than the log: read the whole list');
  assert.deepEqual(read(version() - 1), [[1n, 1n]]);
});

// Every batch runs it: a plan that scans grows with the history, which is never pruned.
test("a batch's events are made from its own history rows alone, a range of rowids, whatever the history holds", (t) => {
  const db = openSqliteConnection(':memory:');
  t.after(() => db.close());
  migrate(db);
  const plan = (db.prepare(`EXPLAIN QUERY PLAN ${UPDATED_EVENTS}`).all({ count: 2, from: 0, to: 2, source: 'api' }) as { detail: string }[]).map((row) => row.detail);
  assert.ok(plan.includes('SEARCH h USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)'), plan.join('\n'));
  assert.deepEqual(plan.filter((step) => step.startsWith('SCAN')), []);
});
