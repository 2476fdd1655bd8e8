import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';

/** scripts/test.mjs with these arguments, from the project root. */
function runner(...args: string[]) {
  return spawnSync(process.execPath, ['scripts/test.mjs', ...args], { encoding: 'utf8' });
}

test('--list names every test file of the listed folders once, this one among them', () => {
  const { status, stdout } = runner('--list');
  assert.equal(status, 0);
  const files = stdout.trim().split('\n');
  assert.ok(files.includes('test/scripts/test-runner.test.ts'));
  assert.ok(files.includes('dashboard/test/dashboard.test.ts'));
  assert.equal(new Set(files).size, files.length);
  assert.ok(files.every((file) => file.endsWith('.test.ts')));
});

test('--except leaves out exactly the file it names', () => {
  const all = runner('--list').stdout.trim().split('\n');
  const { status, stdout } = runner('--list', '--except', 'dashboard/test/dashboard.test.ts');
  assert.equal(status, 0);
  assert.deepEqual(stdout.trim().split('\n'), all.filter((file) => file !== 'dashboard/test/dashboard.test.ts'));
});

test('--except with a file that is not a test fails before running anything, naming it', () => {
  const { status, stdout, stderr } = runner('--list', '--except', 'test/no-such.test.ts');
  assert.notEqual(status, 0);
  assert.equal(stdout, '');
  assert.match(stderr, /--except test\/no-such\.test\.ts: no such test file/);
});

test('every run has a bound on a hung file, unless the caller sets its own', async () => {
  const { FILE_TIMEOUT_MS, nodeArguments } = await import('../../scripts/test-arguments.mjs');
  assert.deepEqual(nodeArguments([], ['a.test.ts']), ['--import', 'tsx', '--test', '--test-concurrency=1', `--test-timeout=${FILE_TIMEOUT_MS}`, 'a.test.ts']);
  assert.deepEqual(nodeArguments(['--test-timeout=5'], ['a.test.ts']), ['--import', 'tsx', '--test', '--test-concurrency=1', '--test-timeout=5', 'a.test.ts']);
});
