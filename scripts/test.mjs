// Runs every *.test.ts under the folders below, several files at once, the longest first (the table of
// scripts/test-order.mjs), then the files that need the machine to themselves, one at a time. Each file
// runs in a node of its own and its output is printed whole when it ends. Node 20's test runner takes no
// globs and runs the files it is given in the order of their names, and npm scripts run under sh, which
// has no **: hence this script.
//
//   node scripts/test.mjs [--list] [--except FILE|FOLDER/]... [--share K/N] [--concurrency N] [NODE_OPTION...]
//     --list           print the files it would run, in the order it starts them, and run nothing
//     --except FILE    leave this test file out (a path from the project root; .ci/test-on-node uses it);
//                      a path ending in / leaves out every file under that folder
//     --share K/N      only the K-th of N shares of the files left, dealt longest first, so the N shares
//                      take about as long (CI runs the suite's shares on other Node lines side by side)
//     --concurrency N  files at once (default TEST_CONCURRENCY, else twice the cores); the files that
//                      need the machine alone run after the rest, one at a time, whatever N is
//     NODE_OPTION      passed to node before each file (e.g. --test-reporter=spec)
import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { performance } from 'node:perf_hooks';
import process from 'node:process';
import { fileURLToPath, URL } from 'node:url';
import { nodeArguments, takeConcurrency } from './test-arguments.mjs';
import { runOrder } from './test-order.mjs';
import { runPool } from './test-pool.mjs';

/** The folders whose tests `npm test` runs (a folder inside another is its own entry); a new one is one more line. */
const TEST_FOLDERS = ['test', 'clients/typescript/test', 'dashboard/test', 'test/hardening', 'test/drill'];

const root = fileURLToPath(new URL('..', import.meta.url));

/** The *.test.ts files under `folder` but not under another listed folder inside it, as paths from the project root, sorted. */
function testFiles(folder) {
  const inner = TEST_FOLDERS.filter((other) => other.startsWith(`${folder}/`));
  return readdirSync(join(root, folder), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.test.ts'))
    .map((entry) => relative(root, join(entry.parentPath, entry.name)))
    .filter((path) => !inner.some((other) => path.startsWith(`${other}/`)))
    .sort();
}

const args = process.argv.slice(2);
const excepted = new Set();
for (let i = args.indexOf('--except'); i >= 0; i = args.indexOf('--except')) {
  const [, file] = args.splice(i, 2);
  if (file === undefined) throw new Error('--except needs a test file');
  excepted.add(file);
}
const share = takeShare(args);
const concurrency = takeConcurrency(args, process.env);
const all = TEST_FOLDERS.flatMap(testFiles);
const isExcepted = (file) => [...excepted].some((path) => (path.endsWith('/') ? file.startsWith(path) : file === path));
// A name that matches nothing is a typo or a moved file: it would silently run what it meant to leave out.
for (const path of excepted) {
  if (!all.some((file) => (path.endsWith('/') ? file.startsWith(path) : file === path))) throw new Error(`--except ${path}: no such test file or folder of tests`);
}
const { shared, alone } = dealt(runOrder(all.filter((file) => !isExcepted(file))), share);
const running = { stopped: false, files: new Map() };
if (args.includes('--list')) {
  process.stdout.write(`${[...shared, ...alone].join('\n')}\n`);
} else {
  // Piped, node's default reporter is TAP (20, 22); a person at a terminal reads the spec reporter, as node --test gives them there.
  const options = process.stdout.isTTY && !args.some((arg) => arg.startsWith('--test-reporter')) ? ['--test-reporter=spec', ...args] : args;
  const write = (text) => process.stdout.write(text);
  const pool = (files, n) => runPool({ files, concurrency: n, argumentsOf: (file) => nodeArguments(options, file), cwd: root, running, write });
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => stop(running, signal));
  const started = performance.now();
  const results = [...(await pool(shared, concurrency)), ...(await pool(alone, 1))];
  summarise(results, performance.now() - started);
}

/** `--share K/N` (taken out of `args`): [K, N], or undefined without it. */
function takeShare(args) {
  const i = args.indexOf('--share');
  if (i < 0) return undefined;
  const [, raw] = args.splice(i, 2);
  const match = /^([1-9][0-9]*)\/([1-9][0-9]*)$/.exec(raw ?? '');
  if (!match || Number(match[1]) > Number(match[2])) throw new Error(`--share takes K/N with 1 <= K <= N, not "${raw}"`);
  return [Number(match[1]), Number(match[2])];
}

/** The K-th of N shares of each list in run order (the longest first): every N-th file from the K-th on. */
function dealt({ shared, alone }, share) {
  if (share === undefined) return { shared, alone };
  const [k, n] = share;
  const mine = (list) => list.filter((_, index) => index % n === k - 1);
  return { shared: mine(shared), alone: mine(alone) };
}

/** Stopped (Ctrl-C, CI's time limit): says which files were running, with what they printed so far, and fails. */
function stop(running, signal) {
  if (running.stopped) return;
  running.stopped = true;
  for (const [file, { child, output }] of running.files) {
    process.stdout.write(`::: ${file}: stopped by ${signal} while running; its output so far:\n${output()}`);
    child.kill(signal);
  }
  process.exitCode = 1;
}

/** The last lines: how many passed, the longest files (what scripts/test-order.mjs lists), and which failed and how. */
function summarise(results, ms) {
  const failed = results.filter((r) => !r.passed).map((r) => r.file);
  const how = results.filter((r) => !r.passed && r.failures !== '');
  const longest = [...results].sort((a, b) => b.seconds - a.seconds).slice(0, 8);
  const minutes = `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
  process.stdout.write(
    `::: ${results.length} test files in ${minutes}, ${concurrency} at a time: ${results.length - failed.length} passed, ${failed.length} failed\n` +
      `::: the longest: ${longest.map((r) => `${r.file} ${r.seconds.toFixed(0)} s`).join(', ')}\n` +
      how.map((r) => `::: ${r.file}: what failed\n${r.failures}\n`).join('') +
      failed.map((file) => `::: FAILED: ${file}\n`).join(''),
  );
  if (failed.length > 0 || running.stopped) process.exitCode = 1;
}
