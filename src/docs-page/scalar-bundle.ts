import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { JAVASCRIPT_CONTENT_TYPE } from '../http/content-type.js';
import { loadOnce } from '../http/load-once.js';
import { StaticAsset } from '../http/static-asset.js';

/** Scalar's browser bundle, as its Fastify package ships it (the package's exports name only its plugin, so found beside it). */
function scalarBundlePath(): string {
  const plugin = createRequire(import.meta.url).resolve('@scalar/fastify-api-reference');
  return join(dirname(plugin), 'js', 'standalone.js');
}

/** Scalar's bundle (3.5 MB), read and compressed once per process, when the docs page is first asked for. */
export const scalarBundle = loadOnce(async () => StaticAsset.named('scalar', 'js', JAVASCRIPT_CONTENT_TYPE, await readFile(scalarBundlePath())));
