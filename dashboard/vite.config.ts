import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

/**
 * The dashboard: built into dist/dashboard/ by the project's build (npm ci runs it), served by
 * the service under /dashboard/. `npm run dashboard:dev` serves it with hot reload and sends /v1
 * to a service on port 8080.
 */
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/dashboard/',
  // Preact's JSX, compiled by esbuild: no Babel, no plugin.
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  resolve: {
    // The typed client from its sources: the dashboard builds without the client's own (tsc) build.
    alias: { '@petstore/inventory-client': fileURLToPath(new URL('../clients/typescript/src/index.ts', import.meta.url)) },
  },
  build: {
    outDir: fileURLToPath(new URL('../dist/dashboard', import.meta.url)),
    emptyOutDir: true,
    // BigInt and the rest of ES2022: every browser of the last three years.
    target: 'es2022',
    // The polyfill would be inline script, which the page's policy forbids; every target browser has modulepreload.
    modulePreload: { polyfill: false },
    reportCompressedSize: false,
  },
  server: { proxy: { '/v1': 'http://127.0.0.1:8080' } },
  clearScreen: false,
});
