import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { BACKENDS, backendSkip } from '../support/backends.js';
import { runCliWith } from '../support/cli.js';
import { sleep, waitFor, type ServerProcess } from '../support/process.js';
import { pets, startService, type Service } from '../support/service.js';
import { startReceiver, type Received } from '../support/webhook-receiver.js';

/**
 * An operator's change made by the CLI (another process, on its own store) takes effect in a
 * running service through the endpoints version, not at the service's next lease round: the lease
 * here is ten minutes, renewed every 200 s, so no round comes during the test after the first one
 * at start, and every effect seen below came by the version.
 */
const ENV = { WEBHOOKS_ALLOW_PRIVATE: 'true', WEBHOOK_LEASE_MS: '600000', WEBHOOK_RETRY_SCHEDULE: '50ms,50ms,50ms,50ms,50ms' };
/** Generous: the machine is shared. The lease round, by contrast, is 200 s away. */
const EFFECT_MS = 30_000;

const CLAIMED = 'webhook endpoint: delivering from this instance';
const STOPPED = 'webhook endpoint: no longer delivered from this instance';
const RESTARTED = 'webhook endpoint: delivery starts again from its recorded place';
const ROTATED = 'webhook endpoint: its secret was rotated';

async function patch(server: ServerProcess, key: string, quantity: number): Promise<void> {
  const res = await fetch(`${server.baseUrl}/v1/inventory/1`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ quantity }),
  });
  assert.equal(res.status, 200, await res.text());
}

/** The CLI, in this process with a store of its own: what `petstore-inventory webhooks ...` does. */
async function webhooks(service: Service, ...args: string[]): Promise<string> {
  const run = await runCliWith({ DATABASE_URL: service.db.databaseUrl, WEBHOOKS_ALLOW_PRIVATE: 'true' }, ['webhooks', ...args]);
  assert.equal(run.code, 0, run.err);
  return run.out;
}

/** How many log lines of the server hold `text`. */
function logged(server: ServerProcess, text: string): number {
  return server.stdout().split('\n').filter((line) => line.includes(text)).length;
}

async function seeLogged(server: ServerProcess, text: string, count: number): Promise<void> {
  await waitFor(() => logged(server, text) >= count, EFFECT_MS).catch(() => assert.fail(`the server did not log "${text}" ${count} time(s):\n${server.stdout()}`));
}

/**
 * Waits until the endpoint's recorded place is the log's head: nothing is in flight or waiting to
 * be recorded, so the next change sends nothing again (delivery is at least once: a change that
 * ends a worker's claim before its flush has the unrecorded events sent again, with their ids).
 */
async function settled(service: Service, id: string): Promise<void> {
  const head = await service.store.events.head();
  const deadline = Date.now() + EFFECT_MS;
  while ((await service.store.webhookEndpoints.getEndpoint(id))?.deliveredSeq !== head) {
    if (Date.now() > deadline) assert.fail(`endpoint ${id} did not record delivery up to ${head}`);
    await sleep(20);
  }
}

const idOf = (r: Received) => String(r.headers['webhook-id']);
const signatures = (r: Received) => String(r.headers['webhook-signature']).split(' ');

for (const backend of BACKENDS) {
  describe(`operator changes reach a running service at once, on ${backend}`, { skip: await backendSkip(backend) }, () => {
    test('add, disable, enable, replay, rotate-secret and remove by the CLI each take effect before any lease round', { timeout: 180_000 }, async (t) => {
      const receiver = await startReceiver(t);
      const service = await startService(t, backend, { items: pets(1), env: ENV });
      const { server } = service;
      const write = service.keys.write;

      // add: claimed and delivered to, with no lease round since the one at start.
      const added = JSON.parse(await webhooks(service, 'add', '--url', receiver.url, '--json')) as { id: string; secret: string };
      await seeLogged(server, CLAIMED, 1);
      await patch(server, write, 1);
      await receiver.waitFor(1);
      assert.ok(receiver.verifies(receiver.received[0]!, added.secret));
      await settled(service, added.id);

      // disable: the worker stops; what is appended meanwhile waits for the endpoint.
      await webhooks(service, 'disable', added.id);
      await seeLogged(server, STOPPED, 1);
      await patch(server, write, 2);
      // enable: claimed again, and the event appended while disabled is delivered.
      await webhooks(service, 'enable', added.id);
      await seeLogged(server, CLAIMED, 2);
      await receiver.waitFor(2);
      await settled(service, added.id);
      assert.equal(receiver.received.length, 2);

      // replay: the worker starts again from the new place, and the events after it come again, in order.
      const first = Number(idOf(receiver.received[0]!).slice('evt_'.length));
      await webhooks(service, 'replay', added.id, '--from', String(first));
      await receiver.waitFor(4);
      assert.deepEqual(receiver.received.slice(2).map(idOf), receiver.received.slice(0, 2).map(idOf), 'both events again, in order');
      await settled(service, added.id);

      // rotate-secret: once the service took the new secret, every delivery carries both signatures.
      const rotated = JSON.parse(await webhooks(service, 'rotate-secret', added.id, '--json')) as { secret: string };
      await seeLogged(server, ROTATED, 1);
      await patch(server, write, 3);
      await receiver.waitFor(5);
      const next = receiver.received[4]!;
      assert.equal(signatures(next).length, 2, 'the new and the previous secret each sign it');
      assert.ok(receiver.verifies(next, rotated.secret), 'it verifies with the new secret');
      assert.ok(receiver.verifies(next, added.secret), 'and with the previous one, until it ends');

      // remove: the worker stops.
      await webhooks(service, 'remove', added.id);
      await seeLogged(server, STOPPED, 2);
      assert.equal(logged(server, RESTARTED), 1, 'the replay alone started a worker again from its place');
    });
  });
}
