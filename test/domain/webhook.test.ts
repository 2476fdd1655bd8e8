import assert from 'node:assert/strict';
import { test } from 'node:test';
import { backlogOf, DISABLED_EXHAUSTED, DISABLED_GONE, MAX_RETRY_AFTER_MS, nextStep, type AttemptOutcome } from '../../src/domain/webhook.js';

const NOW = new Date('2026-11-26T10:00:00.000Z');
const SCHEDULE = [5_000, 300_000, 1_800_000];
const after = (ms: number) => new Date(NOW.getTime() + ms);

test('nextStep: a 2xx is delivered; a 410 disables at once; anything else waits the schedule, and the schedule used up disables (decisions 10.4)', () => {
  const step = (outcome: AttemptOutcome, failures = 0) => nextStep(outcome, failures, SCHEDULE, NOW);
  for (const status of [200, 202, 204, 299]) assert.deepEqual(step({ status }), { kind: 'delivered' });
  assert.deepEqual(step({ status: 410 }, 2), { kind: 'disable', failures: 3, why: DISABLED_GONE });
  assert.deepEqual(step({ status: 500 }), { kind: 'retry', failures: 1, at: after(5_000), why: 'HTTP 500' });
  assert.deepEqual(step({ error: 'ECONNREFUSED' }, 1), { kind: 'retry', failures: 2, at: after(300_000), why: 'ECONNREFUSED' });
  assert.deepEqual(step({ status: 302 }, 2), { kind: 'retry', failures: 3, at: after(1_800_000), why: 'HTTP 302' }, 'a redirect is a failure, never followed');
  assert.deepEqual(step({ error: 'timed out after 10000 ms' }, 3), { kind: 'disable', failures: 4, why: DISABLED_EXHAUSTED });
});

test("nextStep: a 429's or 503's Retry-After slows the retries, never hastens them, up to a day", () => {
  const step = (outcome: AttemptOutcome, failures = 0) => nextStep(outcome, failures, SCHEDULE, NOW);
  assert.deepEqual(step({ status: 429, retryAfterMs: 60_000 }), { kind: 'retry', failures: 1, at: after(60_000), why: 'HTTP 429' });
  assert.deepEqual(step({ status: 503, retryAfterMs: 0 }, 1), { kind: 'retry', failures: 2, at: after(300_000), why: 'HTTP 503' }, 'Retry-After: 0 cannot use the schedule up in seconds');
  assert.deepEqual(step({ status: 429, retryAfterMs: 10 * MAX_RETRY_AFTER_MS }), { kind: 'retry', failures: 1, at: after(MAX_RETRY_AFTER_MS), why: 'HTTP 429' });
  assert.deepEqual(step({ status: 500, retryAfterMs: 60_000 }), { kind: 'retry', failures: 1, at: after(5_000), why: 'HTTP 500' }, 'only 429 and 503');
});

test('backlogOf: events past the seq delivered up to, never below 0', () => {
  assert.equal(backlogOf(10, { deliveredSeq: 7 }), 3);
  assert.equal(backlogOf(10, { deliveredSeq: 12 }), 0);
});
