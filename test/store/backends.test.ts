import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PORT_NAMES } from '../../src/store/store.js';

/**
 * Each backend does the same jobs in files of the same names, under the same names, so the second
 * is read by analogy with the first: open the store, migrate, apply a batch of changes, apply a
 * ChangeBatch (all or nothing), import, record what a write does (the change log), and one file
 * per port. What only one backend needs (SQLite's writer thread, PostgreSQL's pool)
 * lives beside them under names of its own.
 */
const JOBS: Record<string, readonly string[]> = {
  open: ['openStore'],
  migrations: ['MIGRATIONS', 'migrate'],
  'apply-batch': ['applyBatch'],
  'apply-change-batch': ['applyChangeBatch'],
  import: ['importItems'],
  'change-log': ['appendEvents', 'insertHistory'],
  // One file per port, named as the port (webhookEndpoints: webhook-endpoints.ts), exporting the function of its name.
  ...Object.fromEntries(PORT_NAMES.map((port) => [port.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`), [port]])),
};

test('sqlite/ and postgres/ export the same names for the same jobs, from files of the same names', async () => {
  for (const [file, names] of Object.entries(JOBS)) {
    const sqlite = (await import(`../../src/store/sqlite/${file}.js`)) as Record<string, unknown>;
    const postgres = (await import(`../../src/store/postgres/${file}.js`)) as Record<string, unknown>;
    for (const name of names) {
      assert.equal(typeof sqlite[name], typeof postgres[name], `${file}.ts: ${name}`);
      assert.notEqual(sqlite[name], undefined, `sqlite/${file}.ts exports ${name}`);
    }
  }
});
