import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { StoreUnavailableError } from '../../../src/errors.js';
import { openStore as openSqliteStore } from '../../../src/store/sqlite/open.js';
import { threadWriter } from '../../../src/store/sqlite/writer.js';
import { tempDir } from '../../support/process.js';
import { change } from '../../support/store.js';

test('once the writer thread has stopped, it reports why, and every batch is refused as unavailable (503), not lost', async (t) => {
  const filename = join(tempDir(t), 'w.db');
  const store = openSqliteStore(filename);
  await store.changes.addItems([{ petId: 1n, quantity: 0, status: 'available' }]);
  await store.close();

  const writer = threadWriter(filename);
  assert.equal(writer.failure(), undefined);
  const [result] = await writer.apply([change(1n, 3)]);
  assert.equal(result && 'kind' in result && result.kind, 'updated');
  await writer.close();
  assert.ok(writer.failure() instanceof StoreUnavailableError, 'readiness reads this');
  await assert.rejects(writer.apply([change(1n, 4)]), (err) => err instanceof StoreUnavailableError);
  await assert.rejects(writer.durability(), (err) => err instanceof StoreUnavailableError);
});
