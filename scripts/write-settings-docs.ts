/**
 * Writes docs/settings.md: the settings table, from src/config/settings.ts. `npm run docs:settings`
 * runs this; a test fails while the file and the table differ.
 */
import { writeFileSync } from 'node:fs';
import { settingsDocument } from '../src/config/docs.js';

const target = new URL('../docs/settings.md', import.meta.url);
writeFileSync(target, settingsDocument());
console.log(`wrote docs/${target.pathname.split('/').slice(-1)[0]}`);
