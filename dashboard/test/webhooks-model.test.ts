import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { WebhookEndpoint } from '@petstore/inventory-client';
import { webhookRow, webhookState } from '../src/webhooks-model.js';

/** The Webhooks panel's cells, outside the browser. */

const ENDPOINT: WebhookEndpoint = {
  id: 'whk_till',
  url: 'https://till.example/hook',
  description: 'the till',
  enabled: true,
  disabledReason: null,
  deliveredSeq: 12345,
  backlog: 1200,
  maxInFlight: 16,
  failures: 0,
  retrying: 0,
  nextAttemptAt: null,
  lastFailureAt: null,
  lastFailure: null,
  createdAt: '2026-01-02T03:04:05.000Z',
};

test('an endpoint delivering normally: enabled, delivered-up-to seq and backlog with separators, no failure', () => {
  assert.deepEqual(webhookRow(ENDPOINT), {
    id: 'whk_till',
    url: 'https://till.example/hook',
    state: 'Enabled',
    inFlight: 'up to 16',
    delivered: 'seq 12,345',
    backlog: '1,200',
    lastFailure: '—',
    lastFailureAt: null,
  });
});

test('failures in a row say it is retrying; the last failure comes with its time', () => {
  const row = webhookRow({ ...ENDPOINT, failures: 3, retrying: 1, lastFailure: 'HTTP 503', lastFailureAt: '2026-01-02T04:00:00.000Z', nextAttemptAt: '2026-01-02T04:30:00.000Z' });
  assert.equal(row.state, 'Enabled, retrying 1 event (3 failed)');
  assert.equal(webhookState({ enabled: true, disabledReason: null, failures: 2, retrying: 3 }), 'Enabled, retrying 3 events (2 failed)');
  assert.equal(webhookRow({ ...ENDPOINT, maxInFlight: 1 }).inFlight, '1 (in seq order)');
  assert.deepEqual([row.lastFailure, row.lastFailureAt], ['HTTP 503', '2026-01-02T04:00:00.000Z']);
});

test('a disabled endpoint says why, without "disabled" twice', () => {
  assert.equal(webhookState({ enabled: false, disabledReason: 'disabled by an operator', failures: 0, retrying: 0 }), 'Disabled: by an operator');
  assert.equal(webhookState({ enabled: false, disabledReason: 'the receiver answered 410 Gone', failures: 1, retrying: 1 }), 'Disabled: the receiver answered 410 Gone');
  assert.equal(webhookState({ enabled: false, disabledReason: null, failures: 0, retrying: 0 }), 'Disabled: no reason recorded');
});
