import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { BACKENDS, backendSkip } from '../../../test/support/backends.js';
import { buildTestApp } from '../../../test/support/app.js';

/**
 * The client's README walks a new user from install to a conditional update of pet
 * 9007199254740993. This runs its first example as written (only the base URL and the key are the
 * test's), against a live service, so the README cannot drift from what the client does.
 */

const README = new URL('../README.md', import.meta.url);
const CLIENT_ENTRY = fileURLToPath(new URL('../dist/index.js', import.meta.url));
const PET = 9007199254740993n;

/** The first ```ts block under the heading that takes the reader to a conditional update. */
async function readmeExample(): Promise<string> {
  const text = await readFile(README, 'utf8');
  const section = text.slice(text.indexOf('## From zero to a conditional update'));
  const block = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
  assert.ok(block, 'the README has the example');
  return block;
}

for (const backend of BACKENDS) {
  test(`the client README's example runs as written on ${backend}: pet 9007199254740993 is updated, not its neighbour`, { skip: await backendSkip(backend) }, async (t) => {
    const api = await buildTestApp(t, {
      backend,
      transport: 'http',
      items: [
        { petId: PET - 1n, quantity: 1, status: 'available' },
        { petId: PET, quantity: 4, status: 'available' },
      ],
    });
    const example = await readmeExample();
    assert.ok(example.includes("baseUrl: 'http://localhost:8080/v1'"), 'the example names the default base URL');
    const program = example
      .replace("'@petstore/inventory-client'", JSON.stringify(CLIENT_ENTRY))
      .replace("'http://localhost:8080/v1'", JSON.stringify(`${api.baseUrl}/v1`));
    const dir = await mkdtemp(join(tmpdir(), 'client-readme-'));
    t.after(() => rm(dir, { recursive: true, force: true }));
    const file = join(dir, 'example.mts');
    await writeFile(file, program);
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', file], {
      env: { ...process.env, INVENTORY_API_KEY: api.keys.write },
    });
    const [exact, updated] = stdout.trim().split('\n');
    assert.equal(exact, 'true', 'the petId read back is the bigint asked for');
    assert.match(updated ?? '', /^7 "[^"]+" false$/, 'quantity 4 + 3, a new ETag, not a replay');
    const entries = await api.store.entries.listInventory();
    assert.deepEqual(entries.map((e) => [e.petId, e.quantity]), [[PET - 1n, 1], [PET, 7]], 'the neighbour is untouched');
  });
}
