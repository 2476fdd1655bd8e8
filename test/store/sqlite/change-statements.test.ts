import assert from 'node:assert/strict';
import { test } from 'node:test';
import { UPDATED_EVENTS } from '../../../src/store/sqlite/change-statements.js';
import { openSqliteConnection } from '../../../src/store/sqlite/connection.js';
import { migrate } from '../../../src/store/sqlite/migrations.js';

// Every batch runs it: a plan that scans grows with the history, which is never pruned.
test("a batch's events are made from its own history rows alone, a range of rowids, whatever the history holds", (t) => {
  const db = openSqliteConnection(':memory:');
  t.after(() => db.close());
  migrate(db);
  const plan = (db.prepare(`EXPLAIN QUERY PLAN ${UPDATED_EVENTS}`).all({ count: 2 }) as { detail: string }[]).map((row) => row.detail);
  assert.ok(plan.includes('SEARCH h USING INTEGER PRIMARY KEY (rowid>?)'), plan.join('\n'));
  assert.deepEqual(plan.filter((step) => step.startsWith('SCAN')), []);
});
