import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { main } from '../src/cli/main.js';

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
  ];
  for (const [argv, message] of cases) {
    const r = await runCli(env, ...argv);
    assert.deepEqual(r, { code: 2, out: '', err: `petstore-inventory: ${message}\n` }, argv.join(' '));
  }
});
