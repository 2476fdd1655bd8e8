#!/usr/bin/env node
/**
 * Builds dist/ from src/: the CLI (dist/cli.js, which serves too) and the SQLite writer thread
 * (dist/writer-thread.js), as ES modules for Node 20 and later, with source maps.
 *
 * Our code and TypeBox are bundled; every other package is loaded from node_modules as usual.
 * Why: TypeBox is some 700 small modules, and loading them one by one took a third of a second
 * of every start; bundled, it takes a few milliseconds. What a command does not use (the server,
 * for `keys list`) is split into chunks loaded on demand. The output is flat, so the writer
 * thread sits next to the module that starts it, as writer-thread.ts does in the sources.
 * Types are checked by `npm run typecheck`, not here.
 *
 * Then the staff dashboard (the workspace in dashboard/), built by its own build script (Vite) into
 * dist/dashboard/, which the service serves at /dashboard. Vite and the page's packages are that
 * workspace's dependencies, not dev ones, so a production install (`npm ci --omit=dev`) builds it too.
 *
 * Then the typed client (clients/typescript), whose build is tsc: a dev dependency, so an install
 * without them (`npm ci --omit=dev`, a production server) builds the service and skips the client.
 */
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { stdout } from 'node:process';
import { fileURLToPath, URL } from 'node:url';
import { build } from 'esbuild';

const BUNDLED_PACKAGES = /^(typebox|@fastify\/type-provider-typebox)(\/|$)/;

rmSync(new URL('../dist', import.meta.url), { recursive: true, force: true });
await build({
  absWorkingDir: fileURLToPath(new URL('..', import.meta.url)),
  entryPoints: { cli: 'src/cli/main.ts', 'writer-thread': 'src/store/sqlite/writer-thread.ts' },
  outdir: 'dist',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20.11',
  sourcemap: true,
  chunkNames: 'chunk-[hash]',
  logLevel: 'warning',
  plugins: [
    {
      name: 'external-packages-but-typebox',
      setup(b) {
        b.onResolve({ filter: /^[^./]/ }, (args) => (BUNDLED_PACKAGES.test(args.path) ? undefined : { path: args.path, external: true }));
      },
    },
  ],
});

execFileSync('npm', ['run', '--silent', 'build', '-w', '@petstore/inventory-dashboard'], { stdio: 'inherit' });

let typescript = false;
try {
  createRequire(import.meta.url).resolve('typescript');
  typescript = true;
} catch {
  stdout.write('build: the typed client (clients/typescript) is not built: its build needs the dev dependencies\n');
}
if (typescript) execFileSync('npm', ['run', '--silent', 'build', '-w', '@petstore/inventory-client'], { stdio: 'inherit' });
