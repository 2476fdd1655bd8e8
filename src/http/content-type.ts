import { extname } from 'node:path';

export const JAVASCRIPT_CONTENT_TYPE = 'text/javascript; charset=utf-8';
export const HTML_CONTENT_TYPE = 'text/html; charset=utf-8';

/** How a file is served: its media type, and whether br or gzip make it smaller (not so for formats compressed already). */
export interface FileType {
  contentType: string;
  compressible: boolean;
}

/** By file extension: what a bundler (Vite) writes for a web page, and its source maps. */
const FILE_TYPES: Readonly<Record<string, FileType>> = {
  '.js': { contentType: JAVASCRIPT_CONTENT_TYPE, compressible: true },
  '.mjs': { contentType: JAVASCRIPT_CONTENT_TYPE, compressible: true },
  '.css': { contentType: 'text/css; charset=utf-8', compressible: true },
  '.html': { contentType: HTML_CONTENT_TYPE, compressible: true },
  '.json': { contentType: 'application/json; charset=utf-8', compressible: true },
  '.map': { contentType: 'application/json; charset=utf-8', compressible: true },
  '.webmanifest': { contentType: 'application/manifest+json; charset=utf-8', compressible: true },
  '.txt': { contentType: 'text/plain; charset=utf-8', compressible: true },
  '.svg': { contentType: 'image/svg+xml', compressible: true },
  '.ico': { contentType: 'image/x-icon', compressible: true },
  '.wasm': { contentType: 'application/wasm', compressible: true },
  '.ttf': { contentType: 'font/ttf', compressible: true },
  '.otf': { contentType: 'font/otf', compressible: true },
  '.png': { contentType: 'image/png', compressible: false },
  '.jpg': { contentType: 'image/jpeg', compressible: false },
  '.jpeg': { contentType: 'image/jpeg', compressible: false },
  '.gif': { contentType: 'image/gif', compressible: false },
  '.webp': { contentType: 'image/webp', compressible: false },
  '.avif': { contentType: 'image/avif', compressible: false },
  '.woff': { contentType: 'font/woff', compressible: false },
  '.woff2': { contentType: 'font/woff2', compressible: false },
};

/** Bytes of a kind not listed: nothing for a browser to run or render (with nosniff, which every answer carries). */
const UNKNOWN: FileType = { contentType: 'application/octet-stream', compressible: false };

/** How to serve the file of this name. */
export function fileTypeOf(name: string): FileType {
  return FILE_TYPES[extname(name).toLowerCase()] ?? UNKNOWN;
}
