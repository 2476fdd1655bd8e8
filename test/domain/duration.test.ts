import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_DURATION_MS, parseDuration } from '../../src/domain/duration.js';

test('parseDuration reads each unit', () => {
  assert.equal(parseDuration('3600s'), 3_600_000);
  assert.equal(parseDuration('90m'), 5_400_000);
  assert.equal(parseDuration('12h'), 43_200_000);
  assert.equal(parseDuration('30d'), 2_592_000_000);
  assert.equal(parseDuration('2w'), 1_209_600_000);
  assert.equal(parseDuration('1s'), 1000);
});

test('parseDuration accepts up to ten years and no more', () => {
  assert.equal(parseDuration('3650d'), MAX_DURATION_MS);
  assert.equal(parseDuration('521w'), 521 * 7 * 86_400_000);
  assert.equal(parseDuration('3651d'), undefined);
  assert.equal(parseDuration('522w'), undefined);
  assert.equal(parseDuration('999999999999w'), undefined);
});

test('parseDuration rejects anything but a positive whole number and one lowercase unit', () => {
  for (const text of ['', '30', 'd', '0d', '0s', '-1d', '+1d', '1.5h', '30D', ' 30d', '30d ', '30 d', '1d2h', '030d', '1y', '1e3s', '１d']) {
    assert.equal(parseDuration(text), undefined, text);
  }
});
