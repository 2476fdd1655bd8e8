import { readdir, readFile } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ApiError } from '../errors.js';
import { fileTypeOf } from '../http/content-type.js';
import { StaticAsset } from '../http/static-asset.js';

/**
 * The project's dist/dashboard, where the build writes the dashboard, found from this module as
 * the SQLite writer finds its thread: run from the bundle, this code is in dist/ (flat, so
 * dist/dashboard is beside it); run from the sources (tests, through tsx), it is src/routes/.
 */
export const DEFAULT_DASHBOARD_DIRECTORY = fileURLToPath(
  new URL(extname(fileURLToPath(import.meta.url)) === '.ts' ? '../../dist/dashboard/' : './dashboard/', import.meta.url),
);

export const DASHBOARD_NOT_BUILT = 'The dashboard is not built: run `npm run build` on this installation.';

/** The built dashboard as it is served: its page and every file under assets/, by path (assets/index-BqX2a_9F.js). */
export interface DashboardFiles {
  page: Buffer;
  assets: ReadonlyMap<string, StaticAsset>;
}

/**
 * Reads the build in `directory`: index.html and every regular file under assets/ (the bundler
 * names each by its content, so each is served as immutable), compressing them as they are read.
 * Only those paths are ever opened: a request names a key of the map, never a file. Without
 * index.html, 503 service_unavailable saying how to build it.
 */
export async function readDashboard(directory: string): Promise<DashboardFiles> {
  let page: Buffer;
  try {
    page = await readFile(join(directory, 'index.html'));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new ApiError('service_unavailable', DASHBOARD_NOT_BUILT);
    throw err;
  }
  const assets = new Map<string, StaticAsset>();
  for (const file of await filesUnder(join(directory, 'assets'))) {
    const name = `assets/${file}`;
    const { contentType, compressible } = fileTypeOf(name);
    assets.set(name, new StaticAsset(name, contentType, await readFile(join(directory, name)), compressible));
  }
  return { page, assets };
}

/**
 * The regular files under `directory` and its subdirectories, as paths relative to it with "/";
 * none when it does not exist (a page without assets). Symbolic links are not followed: nothing
 * outside the build is served.
 */
async function filesUnder(directory: string, prefix = ''): Promise<string[]> {
  let entries;
  try {
    entries = await readdir(join(directory, prefix), { withFileTypes: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' && prefix === '') return [];
    throw err;
  }
  const files: string[] = [];
  for (const entry of entries) {
    const path = `${prefix}${entry.name}`;
    if (entry.isFile()) files.push(path);
    else if (entry.isDirectory()) files.push(...(await filesUnder(directory, `${path}/`)));
  }
  return files;
}
