import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type * as Esbuild from 'esbuild';

/** Where the bundles are kept: under the project's node_modules, so that the packages they import resolve from there. */
const CACHE = fileURLToPath(new URL('../../../node_modules/.cache/petstore-inventory/threads/', import.meta.url));

/** Each entry's bundle, made once in a process. */
const made = new Map<string, URL>();

/**
 * A thread's TypeScript entry and every source file it imports bundled into one ES module, its
 * packages left to load from node_modules, as `npm run build` bundles the deployed writer thread:
 * what runs the sources (the tests, the bench) starts its threads from this. A thread that loaded
 * each source file through the TypeScript loader took a few hundred milliseconds of CPU to start,
 * and every test that opens a SQLite store starts one. The file is named by its content, so
 * processes running the same sources share it, and one whose sources changed makes another.
 */
export function threadBundle(entry: URL): URL {
  const known = made.get(entry.href);
  if (known) return known;
  // Loaded here only: a deployed server starts its threads from dist/ and never needs esbuild.
  const { buildSync } = createRequire(import.meta.url)('esbuild') as typeof Esbuild;
  const { outputFiles } = buildSync({
    entryPoints: [fileURLToPath(entry)],
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    packages: 'external',
    sourcemap: 'inline',
    write: false,
    logLevel: 'silent',
  });
  const code = outputFiles[0]!.contents;
  const file = join(CACHE, `${basename(entry.pathname, '.ts')}-${createHash('sha256').update(code).digest('hex').slice(0, 16)}.mjs`);
  if (!existsSync(file)) {
    mkdirSync(CACHE, { recursive: true });
    // Written whole, then renamed into place: another process may be starting a thread from it meanwhile.
    const partial = `${file}.${process.pid}.partial`;
    writeFileSync(partial, code);
    renameSync(partial, file);
  }
  const url = pathToFileURL(file);
  made.set(entry.href, url);
  return url;
}
