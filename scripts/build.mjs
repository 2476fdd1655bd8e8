#!/usr/bin/env node
/**
 * Builds dist/ from src/: the CLI (dist/cli.js, which serves too) and the SQLite writer thread
 * (dist/writer-thread.js), as ES modules for Node 20 and later, with source maps.
 *
 * Our code and the packages it loads at every start (TypeBox, Fastify and what Fastify needs) are
 * bundled; the others are loaded from node_modules as usual (EXTERNAL_PACKAGES says which and why).
 * Why: TypeBox is some 700 small modules and Fastify with its own some 180, and finding, reading
 * and compiling them one by one took most of a start; bundled, that is a few files. What a command
 * does not use (the server, for `keys list`) is split into chunks loaded on demand. Fastify's code
 * is CommonJS: in an ES module `require` is not defined, so each output file makes its own (the
 * banner). The output is flat, so the writer thread sits next to the module that starts it, as
 * writer-thread.ts does in the sources.
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

/** The packages left out of the bundle; any other (a new dependency too) is bundled where it is imported. */
const EXTERNAL_PACKAGES = new RegExp(
  `^(${[
    // A native addon, and packages that only some commands or settings load.
    'better-sqlite3', 'pg', 'pg-copy-streams', 'ioredis', '@nats-io/[^/]+', 'prom-client', 'esbuild', '@scalar/[^/]+', 'csv-parse',
    // The logger: its transports start worker threads from files of its own, found beside its modules.
    'pino', 'thread-stream',
    // What Fastify loads only for its own schema compilers and inject(), which the service replaces or does not use.
    'ajv', 'ajv-formats', 'fast-uri', 'fast-json-stringify', '@fastify/ajv-compiler', '@fastify/fast-json-stringify-compiler',
    '@fastify/merge-json-schemas', 'json-schema-ref-resolver', 'light-my-request',
  ].join('|')})(/|$)`,
);

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
  banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
  logLevel: 'warning',
  plugins: [
    {
      name: 'external-packages',
      setup(b) {
        b.onResolve({ filter: /^[^./]/ }, (args) => (EXTERNAL_PACKAGES.test(args.path) || args.path.startsWith('node:') ? { path: args.path, external: true } : undefined));
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
