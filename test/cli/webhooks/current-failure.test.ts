import assert from 'node:assert/strict';
import { test } from 'node:test';
import { currentFailure } from '../../../src/cli/webhooks/current-failure.js';

const failedAt = new Date('2026-11-26T10:00:00.000Z');
const failed = { lastFailure: 'HTTP 500', lastFailureAt: failedAt.toISOString() };
const attempt = (ms: number, status: number | null) => ({ attemptedAt: new Date(failedAt.getTime() + ms), status });

test('the last failure shows while no attempt succeeded since it, and only then', () => {
  assert.equal(currentFailure({ lastFailure: null, lastFailureAt: null }, undefined), null, 'none ever failed');
  assert.deepEqual(currentFailure(failed, undefined), { at: failedAt, text: 'HTTP 500' }, 'no attempt in the log: nothing known to have succeeded');
  assert.deepEqual(currentFailure(failed, attempt(0, 500)), { at: failedAt, text: 'HTTP 500' }, 'the newest attempt is the failure');
  assert.deepEqual(currentFailure(failed, attempt(5000, 503)), { at: failedAt, text: 'HTTP 500' }, 'failing still');
  assert.deepEqual(currentFailure(failed, attempt(5000, null)), { at: failedAt, text: 'HTTP 500' }, 'a network error is no success');
  assert.deepEqual(currentFailure(failed, attempt(-5000, 204)), { at: failedAt, text: 'HTTP 500' }, 'a success before the failure');
  assert.equal(currentFailure(failed, attempt(5000, 204)), null, 'a success since');
  assert.equal(currentFailure(failed, attempt(5000, 299)), null, 'any 2xx');
  assert.deepEqual(currentFailure(failed, attempt(5000, 300)), { at: failedAt, text: 'HTTP 500' }, 'a 3xx is no success');
});
