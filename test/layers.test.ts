import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';
import { LAYERS, layerRules } from '../scripts/layers.mjs';

/** Lints one line of code as if it were the file at `filePath`, with the layer rules alone; the messages of no-restricted-imports. */
async function layerErrors(filePath: string, code: string): Promise<string[]> {
  const eslint = new ESLint({
    cwd: process.cwd(),
    overrideConfigFile: true,
    overrideConfig: [{ files: ['**/*.ts', '**/*.tsx'], languageOptions: { parser: tseslint.parser } }, ...layerRules()],
  });
  const [result] = await eslint.lintText(code, { filePath });
  return result!.messages.filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
}

test('an import that runs back up the layers of src/ fails the lint, at any depth (docs/architecture.md)', async () => {
  const upward: [file: string, code: string][] = [
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
  ];
  for (const [file, code] of upward) {
    assert.equal((await layerErrors(file, code)).length, 1, `${file}: ${code}`);
  }
});

test('imports down the layers, and within a layer, pass', async () => {
  const downward: [file: string, code: string][] = [
    ['src/store/sqlite/entries.ts', "import type { Entries } from '../store.js';"],
    ['src/store/sqlite/entries.ts', "import type { InventoryEntry } from '../../domain/inventory.js';"],
    ['src/routes/operations.ts', "import { contextOf } from '../http/fastify-pipeline.js';"],
    ['src/routes/docs.ts', "import { docsPage } from '../docs-page/page.js';"],
    ['src/cli/serve.ts', "import { startServer } from '../server.js';"],
    ['src/metrics/server.ts', "import { x } from './cells.js';"],
    ['src/app.ts', "import { ListCache } from './cache/list-cache.js';"],
  ];
  for (const [file, code] of downward) assert.deepEqual(await layerErrors(file, code), [], `${file}: ${code}`);
});

test('every folder and top-level file of src/ has a layer', async () => {
  const { readdir } = await import('node:fs/promises');
  const placed = new Set(LAYERS.flat());
  for (const entry of await readdir('src')) assert.ok(placed.has(entry), `src/${entry} is in no layer of scripts/layers.mjs`);
});
