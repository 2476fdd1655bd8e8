// Runs every *.test.ts under the folders below, one file at a time, folder by folder in the list's
// order and by path within a folder: Node 20's test runner takes no globs, and npm scripts run under
// sh, which has no **.
//
//   node scripts/test.mjs [--list] [--except FILE]... [NODE_OPTION...]
//     --list          print the files it would run, one a line, and run nothing
//     --except FILE   leave this test file out (a path from the project root; .ci/test-on-node uses it)
//     NODE_OPTION     passed to node before the files (e.g. --test-reporter=spec)
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import process from 'node:process';
import { fileURLToPath, URL } from 'node:url';
import { nodeArguments } from './test-arguments.mjs';

/** The folders whose tests `npm test` runs, in this order (a folder inside another runs where it is listed); a new one is one more line. */
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
const all = TEST_FOLDERS.flatMap(testFiles);
// A name that matches nothing is a typo or a moved file: it would silently run what it meant to leave out.
for (const file of excepted) if (!all.includes(file)) throw new Error(`--except ${file}: no such test file`);
const files = all.filter((file) => !excepted.has(file));
if (args.includes('--list')) {
  process.stdout.write(`${files.join('\n')}\n`);
} else {
  const child = spawn(process.execPath, nodeArguments(args, files), { cwd: root, stdio: 'inherit' });
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
  // Ended by a signal, the run failed.
  child.on('exit', (code) => process.exit(code ?? 1));
}
