import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { threadBundle } from '../../../src/store/sqlite/thread-bundle.js';
import { startThread } from '../../../src/store/sqlite/writer.js';

/**
 * Where the sources run, a thread starts from its entry bundled with the sources it imports, in a
 * file named by its content: the same entry gives the same file, different sources another one,
 * and the thread runs the sources as they are, relative imports and workerData included.
 */

function entry(t: { after: (fn: () => void) => void }, name: string, factor: number): URL {
  const dir = mkdtempSync(join(tmpdir(), 'inventory-thread-bundle-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'double.ts'), `export const times = (n: number): number => n * ${factor};\n`);
  writeFileSync(
    join(dir, `${name}.ts`),
    "import { parentPort, workerData } from 'node:worker_threads';\nimport { times } from './double.js';\nparentPort!.postMessage(times(workerData as number));\n",
  );
  return pathToFileURL(join(dir, `${name}.ts`));
}

test('a TypeScript entry runs in a thread from one bundled file, named by its content and made once a process', async (t) => {
  const twice = entry(t, 'twice', 2);
  const bundle = threadBundle(twice);
  assert.equal(threadBundle(twice).href, bundle.href, 'the same entry, the same file');
  assert.match(basename(fileURLToPath(bundle)), /^twice-[0-9a-f]{16}\.mjs$/);
  assert.doesNotMatch(readFileSync(bundle, 'utf8'), /from ['"]\.\/double\.js['"]/, 'the relative import is bundled in');

  const thrice = threadBundle(entry(t, 'twice', 3));
  assert.notEqual(thrice.href, bundle.href, 'other sources under the same name: another file');

  const worker = startThread(twice, 21);
  // Both listeners before the first wait: the thread may exit in the same turn it answers.
  const exited = once(worker, 'exit');
  const [answer] = (await once(worker, 'message')) as [number];
  assert.equal(answer, 42);
  assert.deepEqual(await exited, [0]);
});
