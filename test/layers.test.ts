import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, normalize } from 'node:path';
import { test } from 'node:test';
import { ESLint } from 'eslint';
import ts from 'typescript';
import tseslint from 'typescript-eslint';
import { LAYERS, layerRules } from '../scripts/layers.mjs';

/** Lints one line of code as if it were the file at `filePath`, with the layer rules alone; their messages (static imports, and import()). */
async function layerErrors(filePath: string, code: string): Promise<string[]> {
  const eslint = new ESLint({
    cwd: process.cwd(),
    overrideConfigFile: true,
    overrideConfig: [{ files: ['**/*.ts', '**/*.tsx'], languageOptions: { parser: tseslint.parser } }, ...layerRules()],
  });
  const [result] = await eslint.lintText(code, { filePath });
  return result!.messages.filter((m) => m.ruleId === 'no-restricted-imports' || m.ruleId === 'no-restricted-syntax').map((m) => m.message);
}

/** A line of code, and the file it is linted as. */
type Case = [file: string, code: string];

/** Each case fails the layer rules, once. */
async function assertRefused(cases: readonly Case[]): Promise<void> {
  for (const [file, code] of cases) assert.equal((await layerErrors(file, code)).length, 1, `${file}: ${code}`);
}

/** Each case passes the layer rules. */
async function assertAllowed(cases: readonly Case[]): Promise<void> {
  for (const [file, code] of cases) assert.deepEqual(await layerErrors(file, code), [], `${file}: ${code}`);
}

test('an import that runs back up the layers of src/ fails the lint, at any depth (docs/architecture.md)', async () => {
  await assertRefused([
    ['src/domain/inventory.ts', "import type { Store } from '../store/store.js';"],
    ['src/store/sqlite/entries.ts', "import type { Config } from '../../config.js';"],
    ['src/store/open.ts', "import { RequestPipeline } from '../pipeline/pipeline.js';"],
    ['src/operations/answer.ts', "import { buildApp } from '../app.js';"],
    ['src/schemas/values.ts', "import { etagOf } from '../domain/inventory.js';"],
    ['src/app.ts', "import { startServer } from './server.js';"],
    ['src/pipeline/rules.ts', "import { fastLane } from '../http/fast-lane.js';"],
    ['src/http/fast-lane.ts', "import { docsPage } from '../docs-page/page.js';"],
    ['src/docs-page/page.ts', "import { docsRoutes } from '../routes/docs.js';"],
    ['src/operations/index.ts', "export { registerOperations } from '../routes/operations.js';"],
    ['dashboard/src/app.tsx', "import { etagOf } from '../../src/domain/inventory.js';"],
  ]);
});

test('imports down the layers, and within a layer, pass', async () => {
  await assertAllowed([
    ['src/store/sqlite/entries.ts', "import type { Entries } from '../store.js';"],
    ['src/store/sqlite/entries.ts', "import type { InventoryEntry } from '../../domain/inventory.js';"],
    ['src/routes/operations.ts', "import { contextOf } from '../http/fastify-pipeline.js';"],
    ['src/routes/docs.ts', "import { docsPage } from '../docs-page/page.js';"],
    ['src/cli/serve.ts', "import { startServer } from '../server.js';"],
    ['src/metrics/server.ts', "import { x } from './cells.js';"],
    ['src/app.ts', "import { ListCache } from './cache/list-cache.js';"],
  ]);
});

test('an import() that runs back up the layers fails the lint as a static import does; one down passes', async () => {
  await assertRefused([
    ['src/store/open.ts', "const { buildApp } = await import('../app.js');"],
    ['src/operations/answer.ts', "export const lane = () => import('../http/fast-lane.js');"],
    ['src/store/sqlite/entries.ts', "await import(`../../config.js`);"],
    ['src/operations/answer.ts', "const name = 'fast-lane'; await import(`../http/${name}.js`);"],
    ['src/domain/inventory.ts', "void import('../store/store.js').then(() => undefined);"],
    ['clients/typescript/src/client.ts', "await import('../../../src/errors.js');"],
  ]);
  await assertAllowed([
    ['src/store/open.ts', "await import('./sqlite/open.js');"],
    ['src/app.ts', "await import('./limits/redis-allowances.js');"],
    ['src/cli/serve.ts', "await import('../server.js');"],
  ]);
});

/** Every .ts file under `folder`, as paths from the project root. */
async function sourceFiles(folder: string): Promise<string[]> {
  const entries = await readdir(folder, { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile() && e.name.endsWith('.ts')).map((e) => join(e.parentPath, e.name));
}

/** What each file imports of the others (import, import type, export from, import()), by path. */
async function importGraph(files: readonly string[]): Promise<Map<string, string[]>> {
  const known = new Set(files);
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const { importedFiles } = ts.preProcessFile(await readFile(file, 'utf8'), true, true);
    const targets = importedFiles
      .map((imported) => imported.fileName)
      .filter((name) => name.startsWith('.'))
      .map((name) => normalize(join(dirname(file), name.replace(/\.js$/, '.ts'))));
    graph.set(file, targets.filter((target) => known.has(target)));
  }
  return graph;
}

/** The import loops of the graph, each once, as the files along it (the first repeated at the end); a depth-first walk. */
function importLoops(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const loops: string[][] = [];
  const done = new Set<string>();
  const path: string[] = [];
  const visit = (file: string): void => {
    const at = path.indexOf(file);
    if (at >= 0) return void loops.push([...path.slice(at), file]);
    if (done.has(file)) return;
    path.push(file);
    for (const next of graph.get(file) ?? []) visit(next);
    path.pop();
    done.add(file);
  };
  for (const file of graph.keys()) visit(file);
  return loops;
}

test('no file of src/ takes part in an import loop, static or dynamic, types included', async () => {
  const loops = importLoops(await importGraph(await sourceFiles('src')));
  assert.deepEqual(loops.map((loop) => loop.join(' -> ')), []);
});

test('the loop finder sees a loop through import(), import type and export from; none once it is cut', async (t) => {
  const folder = await mkdtemp(join(tmpdir(), 'import-loops-'));
  t.after(() => rm(folder, { recursive: true, force: true }));
  const write = (name: string, code: string) => writeFile(join(folder, name), code);
  await write('open.ts', "export const open = async () => (await import('./backend/open.js')).open();\n");
  await mkdir(join(folder, 'backend'));
  await write('backend/open.ts', "import type { Url } from './connection.js';\nexport const open = (url?: Url) => url;\n");
  await write('backend/connection.ts', "export { open as Url } from '../open.js';\n");
  const files = await sourceFiles(folder);
  assert.deepEqual(importLoops(await importGraph(files)).map((loop) => loop.map((file) => file.slice(folder.length + 1))), [
    ['open.ts', 'backend/open.ts', 'backend/connection.ts', 'open.ts'],
  ]);
  await write('backend/connection.ts', "export type Url = string;\n");
  assert.deepEqual(importLoops(await importGraph(files)), []);
});

test('every folder and top-level file of src/ has a layer', async () => {
  const placed = new Set(LAYERS.flat());
  for (const entry of await readdir('src')) assert.ok(placed.has(entry), `src/${entry} is in no layer of scripts/layers.mjs`);
});
