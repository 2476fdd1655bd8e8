import assert from 'node:assert/strict';
import { test } from 'node:test';
import { eventsCommand } from '../../src/cli/events.js';
import { keysCommand } from '../../src/cli/keys.js';
import { lazyCommand } from '../../src/cli/lazy-command.js';
import { COMMANDS } from '../../src/cli/main.js';
import { petsCommand } from '../../src/cli/pets.js';
import { reservationsCommand } from '../../src/cli/reservations.js';
import { serveCommand } from '../../src/cli/serve.js';
import { webhooksCommand } from '../../src/cli/webhooks.js';

test("each top-level command's summary is its module's own", () => {
  const loaded = { serve: serveCommand, keys: keysCommand, pets: petsCommand, events: eventsCommand, webhooks: webhooksCommand, reservations: reservationsCommand };
  assert.deepEqual(Object.keys(COMMANDS), Object.keys(loaded));
  for (const [name, command] of Object.entries(loaded)) assert.equal(COMMANDS[name]!.summary, command.summary, name);
});

test('a lazy command loads its module only when it runs, and runs it with the same arguments', async () => {
  let loads = 0;
  const calls: string[][] = [];
  const command = lazyCommand('a summary', async () => {
    loads++;
    return { summary: 'a summary', run: async (args) => (calls.push(args), 3) };
  });
  assert.equal(loads, 0);
  assert.equal(await command.run(['x', '--y'], { env: {}, stdout: () => {}, stderr: () => {} }), 3);
  assert.equal(loads, 1);
  assert.deepEqual(calls, [['x', '--y']]);
});
