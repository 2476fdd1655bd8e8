import assert from 'node:assert/strict';
import { test } from 'node:test';
import { REPEATED_SIGNAL_MS, stopRequests } from '../src/stop-signals.js';

/** A clock the test moves by hand. */
function manualClock(): { now: () => number; advance: (ms: number) => void } {
  let at = 1000;
  return { now: () => at, advance: (ms) => void (at += ms) };
}

test('the first stop signal stops; the same signal again within REPEATED_SIGNAL_MS is a copy of it (decisions 7.5)', () => {
  const clock = manualClock();
  const requestOf = stopRequests(clock.now);
  assert.equal(requestOf('SIGINT'), 'stop');
  assert.equal(requestOf('SIGINT'), 'copy', 'the terminal and npm each deliver one Ctrl-C');
  clock.advance(REPEATED_SIGNAL_MS - 1);
  assert.equal(requestOf('SIGINT'), 'copy');
  clock.advance(1);
  assert.equal(requestOf('SIGINT'), 'stop-now', 'a later Ctrl-C means exit now');
});

test('another signal after the first means exit now, however soon it comes', () => {
  const requestOf = stopRequests(manualClock().now);
  assert.equal(requestOf('SIGTERM'), 'stop');
  assert.equal(requestOf('SIGINT'), 'stop-now');
});

test('the window counts from the first signal: copies do not extend it', () => {
  const clock = manualClock();
  const requestOf = stopRequests(clock.now);
  assert.equal(requestOf('SIGTERM'), 'stop');
  clock.advance(REPEATED_SIGNAL_MS / 2);
  assert.equal(requestOf('SIGTERM'), 'copy');
  clock.advance(REPEATED_SIGNAL_MS / 2);
  assert.equal(requestOf('SIGTERM'), 'stop-now');
});
