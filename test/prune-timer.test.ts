import assert from 'node:assert/strict';
import { test } from 'node:test';
import { schedulePruning, type PruneLog } from '../src/prune-timer.js';
import { openTestStore } from './support/backends.js';
import { change, importPlan, importSource } from './support/store.js';
import { until } from './support/process.js';

const DAY_MS = 86_400_000;
/** How long a test waits for a timer's run before it gives up: a deadline on waiting, far below the hour an interval would take, never a measure of speed. */
const LIVENESS_MS = 60_000;

/** Log lines the housekeeping wrote, by level. */
function recordingLog(): PruneLog & { lines: { level: 'warn' | 'info'; fields: object; message: string }[] } {
  const lines: { level: 'warn' | 'info'; fields: object; message: string }[] = [];
  return {
    lines,
    warn: (fields, message) => void lines.push({ level: 'warn', fields, message }),
    info: (fields, message) => void lines.push({ level: 'info', fields, message }),
  };
}

test('housekeeping deletes expired idempotency records, and history past HISTORY_RETENTION_DAYS only when it is set', async (t) => {
  const store = await openTestStore('sqlite', t);
  await store.changes.addItems([{ petId: 1n, quantity: 0, status: 'available' }]);
  const now = Date.now();
  for (const daysAgo of [40, 35, 31, 29, 1]) await store.changes.applyChange(change(1n, daysAgo, { at: new Date(now - daysAgo * DAY_MS) }));
  await store.changes.applyChange(change(1n, 0, { idempotency: { key: 'k', fingerprint: 'f', expiresAt: new Date(now - 1000), recordsPerKey: 10 } }));
  const history = async () => (await store.history.listHistory(1n, { limit: 10 }))!.map((r) => r.quantity);

  const log = recordingLog();
  const keepAll = schedulePruning(store, { historyRetentionDays: 0, eventsRetentionDays: 0 }, log);
  t.after(() => keepAll.stop());
  await keepAll.runNow();
  assert.deepEqual(await history(), [0, 1, 29, 31, 35, 40], 'HISTORY_RETENTION_DAYS=0 keeps every row');
  assert.deepEqual(log.lines, [{ level: 'info', fields: { idempotencyRecords: 1, historyRows: 0, events: 0, webhookDeliveries: 0 }, message: 'housekeeping deleted old rows' }]);

  // On its timer, as a server runs it.
  const thirtyDays = schedulePruning(store, { historyRetentionDays: 30, eventsRetentionDays: 0 }, log, 20);
  t.after(() => thirtyDays.stop());
  await until(async () => (await history()).length <= 3, 'pruned on a 20 ms timer', { timeoutMs: LIVENESS_MS });
  assert.deepEqual(await history(), [0, 1, 29]);
  assert.equal(log.lines.filter((l) => l.level === 'warn').length, 0);
});

test('the first run comes soon after start, not an interval later: an instance restarted often still cleans up', async (t) => {
  const store = await openTestStore('sqlite', t);
  await store.changes.addItems([{ petId: 1n, quantity: 0, status: 'available' }]);
  await store.changes.applyChange(change(1n, 0, { idempotency: { key: 'k', fingerprint: 'f', expiresAt: new Date(Date.now() - 1000), recordsPerKey: 10 } }));
  const log = recordingLog();
  const hourly = schedulePruning(store, { historyRetentionDays: 0, eventsRetentionDays: 0 }, log, 3_600_000, 50);
  t.after(() => hourly.stop());
  await until(() => log.lines.length > 0, 'a first run due 50 ms after start, on an hourly timer', { timeoutMs: LIVENESS_MS });
  assert.deepEqual(log.lines, [{ level: 'info', fields: { idempotencyRecords: 1, historyRows: 0, events: 0, webhookDeliveries: 0 }, message: 'housekeeping deleted old rows' }]);
});

test('housekeeping deletes events past EVENTS_RETENTION_DAYS, oldest first, and a reader behind them is told; 0 keeps them all', async (t) => {
  const store = await openTestStore('sqlite', t);
  const now = Date.now();
  // Created 40 days ago by an import, then changed 35, 31, 29 and 1 days ago: events 1 to 5.
  await store.changes.importItems(importSource([{ petId: 1n, quantity: 0, status: 'available' }]), importPlan(false, new Date(now - 40 * DAY_MS)));
  for (const daysAgo of [35, 31, 29, 1]) await store.changes.applyChange(change(1n, daysAgo, { at: new Date(now - daysAgo * DAY_MS) }));
  const seqs = async (after: number) => (await store.events.readEvents(after, 10)).items.map((e) => e.seq);
  assert.deepEqual(await seqs(0), [1, 2, 3, 4, 5]);
  // Two attempts logged, 31 days and 1 day ago.
  await store.webhookEndpoints.addEndpoint({ id: 'whk_1', url: 'https://receiver.example/hook', description: null, secret: 'whsec_c2VjcmV0', createdAt: new Date() });
  const attempt = (seq: number, daysAgo: number) => ({ endpointId: 'whk_1', eventId: `evt_${seq}`, seq, attemptedAt: new Date(now - daysAgo * DAY_MS), status: 204, error: null, durationMs: 3, responseBody: '' });
  await store.webhookEndpoints.recordAttempts([attempt(3, 31), attempt(5, 1)]);

  const log = recordingLog();
  const keepAll = schedulePruning(store, { historyRetentionDays: 0, eventsRetentionDays: 0 }, log);
  t.after(() => keepAll.stop());
  await keepAll.runNow();
  assert.deepEqual(await seqs(0), [1, 2, 3, 4, 5], 'EVENTS_RETENTION_DAYS=0 keeps every event');

  const thirtyDays = schedulePruning(store, { historyRetentionDays: 0, eventsRetentionDays: 30 }, log);
  t.after(() => thirtyDays.stop());
  await thirtyDays.runNow();
  assert.deepEqual(log.lines, [{ level: 'info', fields: { idempotencyRecords: 0, historyRows: 0, events: 3, webhookDeliveries: 1 }, message: 'housekeeping deleted old rows' }]);
  assert.deepEqual((await store.webhookEndpoints.listDeliveries('whk_1', 10)).map((a) => a.eventId), ['evt_5'], 'the delivery log is kept as long as the events');
  assert.deepEqual(await store.events.readEvents(0, 10), { items: [], head: 5, pruned: true });
  assert.deepEqual(await store.events.readEvents(2, 10), { items: [], head: 5, pruned: true });
  assert.deepEqual(await seqs(3), [4, 5]);
});
