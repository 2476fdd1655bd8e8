import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { promisify } from 'node:util';
import { main } from '../src/cli/main.js';
import { BIN } from './process.js';

const PACKAGE_VERSION = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;

interface Run {
  code: number;
  out: string;
  err: string;
}

async function runCli(env: Record<string, string>, ...argv: string[]): Promise<Run> {
  let out = '';
  let err = '';
  const code = await main(argv, { env, stdout: (s) => (out += s), stderr: (s) => (err += s) });
  return { code, out, err };
}

/** A temp dir and a DATABASE_URL naming a SQLite file in it that does not exist yet. */
function tempStore(t: TestContext): { dir: string; file: string; env: Record<string, string> } {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-cli-polish-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'inventory.db');
  return { dir, file, env: { DATABASE_URL: `sqlite:${file}` } };
}

test('every usage error names the program once, at the start of its one line', async (t) => {
  const { env } = tempStore(t);
  const cases: [string[], string][] = [
    [[], 'no command given: use serve, keys, pets (see "petstore-inventory --help")'],
    [['feed'], 'unknown command "feed": use serve, keys, pets (see "petstore-inventory --help")'],
    [['pets'], 'pets needs a command: use add, list, import, history (see "petstore-inventory pets --help")'],
    [['pets', 'feed'], 'pets has no command "feed": use add, list, import, history (see "petstore-inventory pets --help")'],
    [['keys'], 'keys needs a command: use create, list, revoke (see "petstore-inventory keys --help")'],
    [['keys', 'delete'], 'keys has no command "delete": use create, list, revoke (see "petstore-inventory keys --help")'],
    [['--version', 'x'], '--version takes no arguments'],
  ];
  for (const [argv, message] of cases) {
    const r = await runCli(env, ...argv);
    assert.deepEqual(r, { code: 2, out: '', err: `petstore-inventory: ${message}\n` }, argv.join(' '));
  }
});

test('--version and -V print package.json\'s version, in-process and from the built bin', async (t) => {
  const { env } = tempStore(t);
  for (const flag of ['--version', '-V']) {
    assert.deepEqual(await runCli(env, flag), { code: 0, out: `${PACKAGE_VERSION}\n`, err: '' });
    const { stdout, stderr } = await promisify(execFile)(BIN, [flag]);
    assert.deepEqual([stdout, stderr], [`${PACKAGE_VERSION}\n`, '']);
  }
  assert.match((await runCli(env, '--help')).out, /^ {2}-V, --version {2}print the version$/m);
});
