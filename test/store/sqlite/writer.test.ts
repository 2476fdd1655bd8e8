import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import type { DeliveryAttempt, DeliveryProgress } from '../../../src/domain/webhook.js';
import { StoreUnavailableError } from '../../../src/errors.js';
import { Connection } from '../../../src/store/sqlite/connection.js';
import { openStore as openSqliteStore } from '../../../src/store/sqlite/open.js';
import { deliveryRow, progressWrite } from '../../../src/store/sqlite/record-progress.js';
import { threadWriter } from '../../../src/store/sqlite/writer.js';
import { tempDir } from '../../support/process.js';
import { change } from '../../support/store.js';

/** A SQLite database file with pet 1 at 0, its store closed, for a writer of its own. */
async function storeWithPet1(t: TestContext): Promise<string> {
  const filename = join(tempDir(t), 'w.db');
  const store = openSqliteStore(filename);
  await store.changes.addItems([{ petId: 1n, quantity: 0, status: 'available' }]);
  await store.close();
  return filename;
}

test('a writer closed before its first request starts no thread, and refuses every later request as unavailable (503)', async (t) => {
  const filename = await storeWithPet1(t);

  const writer = threadWriter(filename);
  await writer.close();
  assert.ok(writer.failure() instanceof StoreUnavailableError, 'readiness reads this');
  await assert.rejects(writer.apply([change(1n, 4)]), (err) => err instanceof StoreUnavailableError);
  await assert.rejects(writer.durability(), (err) => err instanceof StoreUnavailableError);
  const reopened = openSqliteStore(filename);
  t.after(() => reopened.close());
  assert.equal((await reopened.entries.getEntry(1n))?.item.quantity, 0, 'nothing was written');
});

test('once the writer thread has stopped, it reports why, and every batch is refused as unavailable (503), not lost', async (t) => {
  const filename = await storeWithPet1(t);

  const writer = threadWriter(filename);
  assert.equal(writer.failure(), undefined);
  const [result] = await writer.apply([change(1n, 3)]);
  assert.equal(result && 'kind' in result && result.kind, 'updated');
  await writer.close();
  assert.ok(writer.failure() instanceof StoreUnavailableError, 'readiness reads this');
  await assert.rejects(writer.apply([change(1n, 4)]), (err) => err instanceof StoreUnavailableError);
  await assert.rejects(writer.durability(), (err) => err instanceof StoreUnavailableError);
  await assert.rejects(writer.recordProgress(progressWrite('whk_1', 'a', progress(1, []), undefined)), (err) => err instanceof StoreUnavailableError);
  await assert.rejects(writer.recordAttempts([deliveryRow(attempt(1))]), (err) => err instanceof StoreUnavailableError);
});

const LONG_LEASE_MS = 60_000;

function attempt(seq: number): DeliveryAttempt {
  return { endpointId: 'whk_1', eventId: `evt_${seq}`, seq, attemptedAt: new Date(Date.UTC(2024, 0, 1, 0, 0, seq)), status: 200, error: null, durationMs: 5, responseBody: 'ok' };
}

function progress(deliveredSeq: number, attempts: DeliveryAttempt[]): DeliveryProgress {
  return { attempts, deliveredSeq, deliveredAbove: [], retrying: [], failures: 0, nextAttemptAt: null, lastFailureAt: null, lastFailure: null };
}

const endpoint = { id: 'whk_1', url: 'https://receiver.example.com/hook', description: null, secret: 'whsec_s', createdAt: new Date(Date.UTC(2024, 0, 1)) };

test("a ':memory:' store records webhook progress on its own connection, fenced by the lease as the writer thread's", async (t) => {
  const store = openSqliteStore(':memory:');
  t.after(() => store.close());
  await store.webhookEndpoints.addEndpoint(endpoint);
  const [leased] = await store.webhookDeliveries.leaseEndpoints('a', LONG_LEASE_MS);
  assert.equal(await store.webhookDeliveries.recordProgress('whk_1', 'b', progress(1, [attempt(1)])), false, 'not the holder');
  assert.equal(await store.webhookDeliveries.recordProgress('whk_1', 'a', progress(1, [attempt(1)]), new Date(leased!.leaseClaimedAt.getTime() - 1)), false, 'an old claim');
  assert.equal((await store.webhookEndpoints.getEndpoint('whk_1'))!.deliveredSeq, 0, 'no progress recorded');
  assert.deepEqual(await store.webhookEndpoints.listDeliveries('whk_1', 10), [attempt(1), attempt(1)], 'the attempts sent are logged');
  assert.equal(await store.webhookDeliveries.recordProgress('whk_1', 'a', progress(1, [attempt(1)]), leased!.leaseClaimedAt), true);
  await store.webhookEndpoints.recordAttempts([attempt(2)]);
  assert.deepEqual(await store.webhookEndpoints.listDeliveries('whk_1', 10), [attempt(2), attempt(1), attempt(1), attempt(1)]);
  assert.equal((await store.webhookEndpoints.getEndpoint('whk_1'))!.deliveredSeq, 1);
  await store.close();
  await assert.rejects(store.webhookDeliveries.recordProgress('whk_1', 'a', progress(2, [])), (err) => err instanceof StoreUnavailableError);
});

test('webhook progress the writer thread cannot commit (another connection holds the lock past the busy timeout) is refused as unavailable (503), and nothing of it is written', async (t) => {
  const filename = join(tempDir(t), 'w.db');
  const store = openSqliteStore(filename);
  t.after(() => store.close());
  await store.webhookEndpoints.addEndpoint(endpoint);
  await store.webhookDeliveries.leaseEndpoints('a', LONG_LEASE_MS);
  const other = new Connection(filename);
  other.exec('BEGIN IMMEDIATE');
  try {
    await assert.rejects(store.webhookDeliveries.recordProgress('whk_1', 'a', progress(1, [attempt(1)])), (err) => err instanceof StoreUnavailableError);
    await assert.rejects(store.webhookEndpoints.recordAttempts([attempt(2)]), (err) => err instanceof StoreUnavailableError);
  } finally {
    other.exec('ROLLBACK');
    other.close();
  }
  assert.deepEqual(await store.webhookEndpoints.listDeliveries('whk_1', 10), []);
  assert.equal(await store.webhookDeliveries.recordProgress('whk_1', 'a', progress(1, [attempt(1)])), true, 'the retry goes through');
  assert.deepEqual(await store.webhookEndpoints.listDeliveries('whk_1', 10), [attempt(1)]);
});
