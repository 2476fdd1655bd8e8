import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { KEY_CACHE_TTL_MS } from '../../src/auth/authenticator.js';
import { backendSkip } from '../support/backends.js';
import { runCli } from '../support/cli.js';
import { sleep, startServerProcess, tempDir } from '../support/process.js';
import { ExampleRun } from './example-run.js';
import { codeBlocks, documentPaths, headingAnchors, relativeLinks, resolveLink, ROOT, type CodeBlock } from './markdown.js';

/**
 * Every shell example of the README, DEVELOPERS.md and docs/*.md runs as written, and prints what
 * the document shows under it. The conventions (the fences, the `# ` lines, the stand-ins) are
 * described in DEVELOPERS.md, "The examples in the docs".
 */

const documents = documentPaths().map((file) => ({ file, text: readFileSync(join(ROOT, file), 'utf8') }));
const blocks = documents.flatMap(({ file, text }) => codeBlocks(file, text));

/** A block that runs: `sh`, or `sh postgres` for one that needs PostgreSQL. */
function runs(block: CodeBlock): boolean {
  return block.language === 'sh' && (block.mode === '' || block.mode === 'postgres');
}

test('every code block of the docs runs, or says in its fence why it cannot', () => {
  const unmarked = blocks.filter((b) => !runs(b) && b.language !== 'text' && !/^no-run: \S/.test(b.mode));
  assert.deepEqual(
    unmarked.map((b) => `${b.file}:${b.line} \`\`\`${b.language} ${b.mode}`),
    [],
    'a block is ```sh (it runs), ```sh postgres, ```text (not a command: a synopsis), or ```LANG no-run: REASON',
  );
  const notRun = blocks.filter((b) => !runs(b));
  // Keeps the exceptions in sight in every run.
  for (const b of notRun) process.stderr.write(`not run: ${b.file}:${b.line} ${b.language} ${b.mode}\n`);
  process.stderr.write(`${blocks.filter(runs).length} blocks run, ${notRun.length} do not\n`);
});

for (const { file } of documents) {
  const runnable = blocks.filter((b) => b.file === file && runs(b));
  if (runnable.length === 0) continue;
  const needsPostgres = runnable.some((b) => b.mode === 'postgres');
  test(`the examples of ${file} run as written and print what it shows`, { skip: needsPostgres ? await backendSkip('postgres') : false }, async (t) => {
    const run = new ExampleRun(t);
    for (const block of runnable) await run.runBlock(block);
    t.diagnostic(`${run.commands} commands in ${runnable.length} blocks`);
  });
}

test('the command synopses (```text blocks) name only commands and options the CLI has', async () => {
  const missing: string[] = [];
  for (const block of blocks.filter((b) => b.language === 'text')) {
    for (const [i, line] of block.lines.entries()) {
      const words = line.split(/\s+/);
      if (words[0] !== './bin/petstore-inventory') continue;
      const command = words.slice(1, words.findIndex((w, j) => j > 0 && !/^[a-z]+(-[a-z]+)*$/.test(w)));
      const help = await runCli({}, ...command, '--help');
      if (help.code !== 0) missing.push(`${block.file}:${block.line + 1 + i}: no command "${command.join(' ')}"`);
      for (const option of line.match(/--[a-z][a-z-]*/g) ?? []) {
        if (!help.out.includes(option)) missing.push(`${block.file}:${block.line + 1 + i}: "${command.join(' ')} --help" has no ${option}`);
      }
    }
  }
  assert.deepEqual(missing, []);
});

test('every relative link of the docs points to a file, and to a heading of it when it names one', () => {
  const broken: string[] = [];
  for (const { file, text } of documents) {
    for (const link of relativeLinks(file, text)) {
      const { path, anchor } = resolveLink(link);
      const where = `${file}:${link.line} (${link.target})`;
      if (!existsSync(join(ROOT, path))) broken.push(`${where}: no ${path}`);
      else if (anchor !== undefined && path.endsWith('.md') && !headingAnchors(readFileSync(join(ROOT, path), 'utf8')).has(anchor)) {
        broken.push(`${where}: no heading #${anchor} in ${path}`);
      }
    }
  }
  assert.deepEqual(broken, []);
});

test(`a key revoked with the CLI is refused by a running server within ${KEY_CACHE_TTL_MS / 1000} s, as "keys revoke --help" and docs/cli.md say`, async (t) => {
  const seconds = `${KEY_CACHE_TTL_MS / 1000} seconds`;
  const help = (await runCli({}, 'keys', 'revoke', '--help')).out;
  assert.match(help.replace(/\s+/g, ' '), new RegExp(`every server on the same store within ${seconds}`), 'the help says how soon');
  const cliDoc = documents.find((d) => d.file === 'docs/cli.md')!.text.replace(/\s+/g, ' ');
  assert.match(cliDoc, new RegExp(`A revoked key is refused by every server on the same store within ${seconds}`), 'docs/cli.md says the same');

  const db = `sqlite:${join(tempDir(t), 'inventory.db')}`;
  const key = (await runCli({ DATABASE_URL: db }, 'keys', 'create', '--name', 'till 2')).out.trim();
  const server = await startServerProcess(t, { DATABASE_URL: db });
  const get = async () => (await fetch(`${server.baseUrl}/v1/inventory`, { headers: { authorization: `Bearer ${key}` } })).status;
  assert.equal(await get(), 200, 'the server has looked the key up, and keeps it');
  const listed = JSON.parse((await runCli({ DATABASE_URL: db }, 'keys', 'list', '--json')).out) as { id: string }[];
  // The key stays in use while it is revoked, so the server holds a fresh lookup of it at that moment.
  let inUse = true;
  const use = (async () => {
    while (inUse) await Promise.all([get(), sleep(100)]);
  })();
  assert.equal((await runCli({ DATABASE_URL: db }, 'keys', 'revoke', listed[0]!.id)).code, 0);
  const revokedAt = Date.now();
  inUse = false;
  await use;
  // Refused once the server's lookup is older than the cache's life (decisions 2.6); the wait only ends a run that never sees it.
  let status = await get();
  while (status === 200 && Date.now() - revokedAt < 30_000) {
    await sleep(50);
    status = await get();
  }
  assert.equal(status, 401, 'the revoked key is refused');
  t.diagnostic(`refused ${Date.now() - revokedAt} ms after the revocation`);
});
