import assert from 'node:assert/strict';
import { test } from 'node:test';
import { HistogramCell } from '../../src/metrics/cells.js';
import { measuredPort, measuredStore } from '../../src/metrics/measured-store.js';
import { PORT_NAMES } from '../../src/store/store.js';
import { openTestStore } from '../support/backends.js';

test('a measured port times the members that answer with a promise, and passes one that answers at once (a subscription) through', async () => {
  const cells = new Map<string, HistogramCell>();
  const cellOf = (member: string) => {
    const cell = new HistogramCell([0.001, 1]);
    cells.set(member, cell);
    return cell;
  };
  let stopped = false;
  const port = {
    head: async () => 7,
    onAppended: (listener: () => void) => {
      listener();
      return () => void (stopped = true);
    },
  };
  const measured = measuredPort(port, cellOf);
  assert.equal(await measured.head(), 7);
  await Promise.resolve();
  assert.equal(cells.get('head')!.count, 1);

  let told = 0;
  const stop = measured.onAppended(() => told++);
  assert.equal(told, 1);
  assert.equal(typeof stop, 'function');
  stop();
  assert.equal(stopped, true);
  assert.equal(cells.get('onAppended')?.count ?? 0, 0, 'nothing observed for a call without a promise');
});

test('a measured store times every member of every port, naming none, and keeps the backend', async (t) => {
  const store = await openTestStore('sqlite', t);
  const cells = new Map<string, HistogramCell>();
  const measured = measuredStore(store, {
    storeCall: (member) => {
      const cell = new HistogramCell([0.001, 1]);
      cells.set(member, cell);
      return cell;
    },
  });
  const members = PORT_NAMES.flatMap((port) => Object.keys(store[port]));
  const untimed = ['durability', 'onAppended', 'onEndpointsChanged'];
  assert.deepEqual([...cells.keys()].sort(), members.filter((member) => !untimed.includes(member)).sort());
  assert.deepEqual(Object.keys(measured).sort(), Object.keys(store).sort());
  assert.equal(measured.backend, 'sqlite');

  await measured.webhookEndpoints.addEndpoint({ id: 'whk_1', url: 'https://example.com/hook', description: null, secret: 'whsec_AAAA', createdAt: new Date() });
  assert.deepEqual((await measured.webhookDeliveries.leaseEndpoints('holder', 60_000)).map((e) => e.id), ['whk_1']);
  assert.equal(cells.get('addEndpoint')!.count, 1);
  assert.equal(cells.get('leaseEndpoints')!.count, 1);
});
