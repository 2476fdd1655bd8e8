import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { test } from 'node:test';
import { tempDir } from '../../support/process.js';

const CHURN = resolve(import.meta.dirname, '..', '..', 'fixtures', 'sqlite-churn.ts');

// Node 24.19+ aborts when V8 collects a better-sqlite3 object at the wrong moment; the store keeps them all (src/store/sqlite/connection.ts).
test('stores opened, used and closed while the collector runs often: the process survives', (t) => {
  const run = spawnSync(process.execPath, ['--max-semi-space-size=1', '--import', 'tsx', CHURN, tempDir(t)], { encoding: 'utf8', timeout: 120_000 });
  assert.equal(run.signal, null, `killed by ${run.signal}: ${run.stderr}`);
  assert.equal(run.status, 0, run.stderr);
  assert.match(run.stdout, /^ok /);
});
