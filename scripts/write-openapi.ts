/**
 * Writes openapi.json at the repository root: the document the service serves under the default
 * configuration (no base URLs set, so `servers` is the relative /v1). `npm run openapi` runs this,
 * then regenerates the typed client's types from the file; a test fails while the two differ.
 */
import { writeFileSync } from 'node:fs';
import { loadConfig } from '../src/config.js';
import { documentFileText, serviceDocument } from '../src/openapi/service-document.js';

const target = new URL('../openapi.json', import.meta.url);
// The defaults, not this shell's environment: the committed document must not depend on who ran it.
writeFileSync(target, documentFileText(serviceDocument(loadConfig({}))));
console.log(`wrote ${target.pathname.split('/').slice(-1)[0]}`);
