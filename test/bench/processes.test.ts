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

test('spawnChild: exited resolves about a second after the exit when a descendant holds the pipes open', async () => {
  const started = Date.now();
  const spawned = spawnChild(LATE_WRITER(20));
  assert.equal(await spawned.exited, '0');
  const waited = Date.now() - started;
  // Not a timing assertion of speed: the bound is what keeps a stray descendant from holding a run, so it has to hold.
  assert.ok(waited < 10_000, `exited took ${waited} ms`);
  assert.equal(spawned.output(), 'early\n');
  spawned.child.stdout?.destroy();
  spawned.child.stderr?.destroy();
});
