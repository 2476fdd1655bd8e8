import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { ConfigError, loadConfig, readSetting, SETTINGS, type ConfigVariable } from '../../src/config.js';
import { settingsDocument } from '../../src/config/docs.js';
import type { Setting } from '../../src/config/setting.js';

const ROWS = Object.entries(SETTINGS) as [string, Setting][];

/** Reads one setting from `text` as the service does: through loadConfig, or as `serve` reads WORKERS. */
function load(variable: string, setting: Setting, text: string): unknown {
  if (setting.key === undefined) return readSetting(variable, text, setting.value);
  return loadConfig({ [variable]: text })[setting.key as keyof ReturnType<typeof loadConfig>];
}

test('the committed docs/settings.md is the table in src/config/settings.ts (`npm run docs:settings` rewrites it)', async () => {
  const committed = await readFile(new URL('../../docs/settings.md', import.meta.url), 'utf8');
  assert.equal(committed, settingsDocument(), 'docs/settings.md is stale: run `npm run docs:settings` and commit the result');
});

test('every setting has one line of doc and says what it accepts, and the docs table lists each', () => {
  const document = settingsDocument();
  for (const [variable, setting] of ROWS) {
    assert.match(setting.doc, /^\S[^\n]*$/, variable);
    assert.match(setting.value.accepts, /^\S[^\n]*$/, variable);
    assert.ok(document.includes(`| \`${variable}\` |`), variable);
  }
});

test('Config has one member per row with a key, each at its default when nothing is set', () => {
  const config = loadConfig({});
  const keyed = ROWS.filter(([, s]) => s.key !== undefined);
  assert.deepEqual(Object.keys(config), keyed.map(([, s]) => s.key));
  for (const [, setting] of keyed) assert.deepEqual(config[setting.key as keyof typeof config], setting.value.default, setting.key);
  assert.deepEqual(ROWS.filter(([, s]) => s.key === undefined).map(([v]) => v), ['WORKERS'], 'only serve reads WORKERS');
});

test('every default is a value its setting accepts, and every example in the docs loads', () => {
  for (const [variable, setting] of ROWS) {
    const fallback = setting.value.default;
    if (fallback !== undefined && typeof fallback !== 'object') assert.deepEqual(load(variable, setting, String(fallback)), fallback, variable);
    if (setting.example !== undefined) assert.doesNotThrow(() => load(variable, setting, setting.example!), variable);
  }
});

test('each setting with bounds takes its least and greatest value, and one beyond either is a ConfigError naming it', () => {
  const bounded = ROWS.filter(([, s]) => s.value.bounds !== undefined);
  assert.ok(bounded.length >= 15, 'every whole-number setting, BODY_LIMIT, TRUST_PROXY and WORKERS');
  for (const [variable, setting] of bounded) {
    const { min, max } = setting.value.bounds!;
    assert.equal(load(variable, setting, String(min)), min, variable);
    assert.equal(load(variable, setting, String(max)), max, variable);
    for (const beyond of [min - 1, max + 1]) {
      assert.throws(
        () => load(variable, setting, String(beyond)),
        (err: unknown) => err instanceof ConfigError && err.message.startsWith(`${variable} must be`),
        `${variable}=${beyond}`,
      );
    }
  }
});

test('a blank value is an unset one, and flags (overrides) win over the environment', () => {
  assert.equal(loadConfig({ PORT: '  ' }).port, 8080);
  assert.equal(loadConfig({ PORT: ' 9000 ' }).port, 9000);
  const variables: ConfigVariable[] = ['PORT', 'HOST', 'DATABASE_URL', 'LOG_LEVEL'];
  const config = loadConfig(
    { PORT: '9000', HOST: '127.0.0.1', DATABASE_URL: 'sqlite::memory:', LOG_LEVEL: 'warn' },
    { PORT: '9100', HOST: '::1', DATABASE_URL: 'sqlite:/tmp/x.db', LOG_LEVEL: 'error' },
  );
  assert.deepEqual(
    variables.map((v) => config[SETTINGS[v].key]),
    [9100, '::1', 'sqlite:/tmp/x.db', 'error'],
  );
});
