import type { Setting, SettingData } from './setting.js';
import { SETTINGS } from './settings.js';

/** What `npm run docs:settings` writes to docs/settings.md: the settings table and the words around it. */
export function settingsDocument(): string {
  const rows = Object.entries(SETTINGS).map(([variable, setting]: [string, Setting]) => {
    const flag = setting.flag ? ` (\`--${setting.flag.name}\`)` : '';
    const example = setting.example === undefined ? '' : `\`${setting.example}\``;
    return `| \`${variable}\` | ${defaultText(setting.value.defaultText ?? setting.value.default, '`')} | ${setting.value.accepts} | ${example} | ${setting.doc}${flag} |`;
  });
  return [
    '# Settings',
    '',
    '<!-- Written by `npm run docs:settings` from src/config/settings.ts: change the table there, not here. -->',
    '',
    'Environment variables; `serve` flags override them (`petstore-inventory serve --help` lists the flags).',
    'A bad value stops the process at start with a message that names it and says what it accepts;',
    'a blank value is the same as an unset one.',
    '',
    '| variable | default | accepts | example | meaning |',
    '|---|---|---|---|---|',
    ...rows,
    '',
  ].join('\n');
}

/** A default as the docs and `serve --help` show it: "unset" for none (or an empty list), in `quote`s otherwise. */
export function defaultText(value: SettingData, quote = ''): string {
  const text = typeof value === 'object' ? value.join(',') : value === undefined ? '' : String(value);
  return text === '' ? 'unset' : `${quote}${text}${quote}`;
}
