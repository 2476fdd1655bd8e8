import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
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

test('--except with a folder (ending in /) leaves out every file under it, and a folder with no tests is refused', () => {
  const all = runner('--list').stdout.trim().split('\n');
  const { status, stdout } = runner('--list', '--except', 'test/hardening/');
  assert.equal(status, 0);
  assert.deepEqual(stdout.trim().split('\n'), all.filter((file) => !file.startsWith('test/hardening/')));
  const missing = runner('--list', '--except', 'test/no-such-folder/');
  assert.notEqual(missing.status, 0);
  assert.match(missing.stderr, /--except test\/no-such-folder\/: no such test file or folder of tests/);
});

test('--share K/N: the N shares hold every file once between them, dealt in run order, and a bad share is refused', () => {
  const all = runner('--list').stdout.trim().split('\n');
  const shares = [1, 2, 3].map((k) => runner('--list', '--share', `${k}/3`).stdout.trim().split('\n'));
  assert.deepEqual([...shares.flat()].sort(), [...all].sort());
  // Dealt longest first: the three longest files start the three shares.
  assert.deepEqual(shares.map((share) => share[0]), all.slice(0, 3));
  for (const bad of ['0/2', '3/2', 'half']) {
    const { status, stderr } = runner('--list', '--share', bad);
    assert.notEqual(status, 0, bad);
    assert.match(stderr, /--share takes K\/N with 1 <= K <= N/);
  }
});

test('every file has a bound on hanging, unless the caller sets its own', async () => {
  const { FILE_TIMEOUT_MS, nodeArguments } = await import('../../scripts/test-arguments.mjs');
  assert.deepEqual(nodeArguments([], 'a.test.ts'), ['--import', 'tsx', '--test', `--test-timeout=${FILE_TIMEOUT_MS}`, 'a.test.ts']);
  assert.deepEqual(nodeArguments(['--test-timeout=5'], 'a.test.ts'), ['--import', 'tsx', '--test', '--test-timeout=5', 'a.test.ts']);
});

test('files at once: --concurrency over TEST_CONCURRENCY over twice the cores; anything but a whole number from 1 is refused', async () => {
  const { DEFAULT_CONCURRENCY, takeConcurrency } = await import('../../scripts/test-arguments.mjs');
  assert.equal(DEFAULT_CONCURRENCY, 2 * availableParallelism());
  assert.equal(takeConcurrency([], {}), DEFAULT_CONCURRENCY);
  assert.equal(takeConcurrency([], { TEST_CONCURRENCY: '3' }), 3);
  const args = ['--test-reporter=spec', '--concurrency', '5', '--concurrency=6'];
  assert.equal(takeConcurrency(args, { TEST_CONCURRENCY: '3' }), 6);
  assert.deepEqual(args, ['--test-reporter=spec'], 'taken out of what goes to node');
  assert.throws(() => takeConcurrency([], { TEST_CONCURRENCY: '0' }), /TEST_CONCURRENCY must be a whole number of files from 1 up, not "0"/);
  assert.throws(() => takeConcurrency(['--concurrency', 'many'], {}), /--concurrency must be a whole number of files from 1 up, not "many"/);
});

test('the order: the longest files first, one the table does not know in the middle, the files that need the machine alone last', async () => {
  const { ALONE, runOrder } = await import('../../scripts/test-order.mjs');
  const listed = runner('--list').stdout.trim().split('\n');
  const { shared, alone } = runOrder(listed);
  assert.deepEqual([...shared, ...alone], listed, '--list prints the order of a run');
  assert.deepEqual(new Set(alone), new Set([...ALONE].filter((file) => listed.includes(file))));
  assert.ok(alone.length > 0 && alone.every((file) => listed.indexOf(file) > listed.indexOf(shared.at(-1)!)));
  const { shared: withNew } = runOrder([...shared, 'test/new.test.ts']);
  const at = withNew.indexOf('test/new.test.ts');
  assert.ok(at > 0 && at < withNew.length - 1, `a new file starts in the middle, at ${at} of ${withNew.length}`);
  assert.equal(runOrder(['test/json.test.ts', 'test/instances.test.ts']).shared[0], 'test/instances.test.ts', 'the longer first');
});

test('a run: files side by side, each file\'s output whole under its name, passed or FAILED', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'test-runner-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const [pass, fail] = ['pass', 'fail'].map((name) => {
    const file = join(dir, `${name}.test.mjs`);
    writeFileSync(file, `import { test } from 'node:test';\ntest('${name}', () => { if ('${name}' === 'fail') throw new Error('failed on purpose'); });\n`);
    return file;
  }) as [string, string];
  const { runPool } = await import('../../scripts/test-pool.mjs');
  const running = { stopped: false, files: new Map() };
  const printed: string[] = [];
  const results = await runPool({ files: [pass, fail], concurrency: 2, argumentsOf: (file) => ['--test', file], cwd: dir, running, write: (text) => void printed.push(text) });
  assert.deepEqual(new Map(results.map((r) => [r.file, r.passed])), new Map([[pass, true], [fail, false]]));
  assert.equal(printed.length, 2, 'one block a file');
  const block = (file: string) => printed.find((text) => text.startsWith(`::: ${file}: `)) ?? '';
  assert.match(block(pass), /^::: \S+: passed in \d+\.\d s\n/);
  assert.match(block(fail), /^::: \S+: FAILED \(exit code 1\) in \d+\.\d s\n[^]*failed on purpose/);
  assert.equal(running.files.size, 0);
  const failures = new Map(results.map((r) => [r.file, r.failures]));
  assert.equal(failures.get(pass), '');
  assert.match(failures.get(fail) ?? '', /^not ok 1 - fail\n[^]*failed on purpose[^]*\n {2}\.\.\.$/, 'the failing test\'s block, kept for the last lines');
});
