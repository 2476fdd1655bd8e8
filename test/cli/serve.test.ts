import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SETTINGS } from '../../src/config.js';
import { defaultText } from '../../src/config/docs.js';
import type { Setting } from '../../src/config/setting.js';
import { BENCH_WITHOUT_EVENT_LOG, serveCommand } from '../../src/cli/serve.js';
import { settingOverrides } from '../../src/cli/setting-flags.js';
import { pets, startService } from '../support/service.js';

async function serveHelp(): Promise<string> {
  let out = '';
  const code = await serveCommand.run(['--help'], { env: {}, stdout: (text) => (out += text), stderr: () => {} });
  assert.equal(code, 0);
  return out;
}

test('serve --help lists every setting it has a flag for: flag, variable, doc, what it accepts and the default', async () => {
  const help = await serveHelp();
  // The descriptions wrap; read them as one line each.
  const flat = help.replace(/\n {23}/g, ' ');
  const flagged = (Object.entries(SETTINGS) as [string, Setting][]).filter(([, s]) => s.flag !== undefined);
  assert.deepEqual(flagged.map(([v]) => v), ['PORT', 'HOST', 'DATABASE_URL', 'LOG_LEVEL', 'WORKERS']);
  for (const [variable, { flag, doc, value }] of flagged) {
    const line = `--${flag!.name} ${flag!.placeholder}`.padEnd(21) + `${variable}: ${doc}; ${value.accepts} (default ${defaultText(value.default)})`;
    assert.ok(flat.includes(`\n  ${line}\n`), `${variable} in:\n${help}`);
  }
  assert.match(flat, /^ {2}--workers N\|auto {5}WORKERS: processes serving on the one port; a whole number from 1 to 64, or "auto" \(one per CPU\) \(default 1\)$/m);
  assert.match(flat, /^ {2}--log-level LEVEL {4}LOG_LEVEL: .*; one of fatal, error, warn, info, debug, trace, silent \(default info\)$/m);
  assert.ok(help.split('\n').every((l) => l.length <= 100), help);
});

test("serve's setting flags override their variables; --workers is read apart", () => {
  assert.deepEqual(settingOverrides({ port: '9100', host: '::1', 'database-url': 'sqlite::memory:', 'log-level': 'warn', workers: '2' }), {
    PORT: '9100',
    HOST: '::1',
    DATABASE_URL: 'sqlite::memory:',
    LOG_LEVEL: 'warn',
  });
  assert.deepEqual(settingOverrides({}), {});
});

test(`serve with ${BENCH_WITHOUT_EVENT_LOG}=1 (the bench's server without the event log) applies a PATCH and appends no event, and says so`, async (t) => {
  // The store option itself is tested on both backends (test/store/omit-change-events.test.ts); this is its way in from serve.
  const service = await startService(t, 'sqlite', { items: pets(1), env: { [BENCH_WITHOUT_EVENT_LOG]: '1' } });
  const head = await service.store.events.head();
  const res = await fetch(`${service.server.baseUrl}/v1/inventory/1`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${service.keys.write}`, 'content-type': 'application/json' },
    body: JSON.stringify({ quantity: 4 }),
  });
  assert.equal(res.status, 200, await res.text());
  assert.equal((await service.store.entries.getEntry(1n))?.item.quantity, 4);
  assert.equal((await service.store.history.listHistory(1n, { limit: 10 }))?.length, 1);
  assert.equal(await service.store.events.head(), head);
  assert.match(service.server.stdout(), /changes of quantity append no events: a benchmark of the event log/);
});
