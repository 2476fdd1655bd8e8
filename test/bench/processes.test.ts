import assert from 'node:assert/strict';
import { test } from 'node:test';
import { spawnChild } from '../../bench/processes.js';

// A shell that exits at once and leaves a background job holding its stdout: the job's output
// arrives after the child's 'exit', as a load generator's summary may.
const LATE_WRITER = (delaySeconds: number) => ['sh', '-c', `(sleep ${delaySeconds}; echo late) & echo early`];

test('spawnChild: exited resolves with the output read to its end, not at the exit event', async () => {
  const spawned = spawnChild(LATE_WRITER(0.3));
  const how = await spawned.exited;
  assert.equal(how, '0');
  assert.equal(spawned.output(), 'early\nlate\n');
});

test('spawnChild: exited resolves after the exit while a descendant still holds the pipes open', async () => {
  // The descendant prints its pid and sleeps far longer than any wait of the pool: only the fallback after 'exit' can end the wait.
  const spawned = spawnChild(['sh', '-c', 'sleep 600 & echo $!']);
  assert.equal(await spawned.exited, '0');
  const descendant = Number(spawned.output().trim());
  try {
    assert.ok(Number.isInteger(descendant) && descendant > 0, spawned.output());
    assert.equal(spawned.child.stdout?.readableEnded, false, 'resolved while the pipe is still open (the descendant holds it)');
    process.kill(descendant, 0);
  } finally {
    process.kill(descendant, 'SIGKILL');
    spawned.child.stdout?.destroy();
    spawned.child.stderr?.destroy();
  }
});
