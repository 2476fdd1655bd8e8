import assert from 'node:assert/strict';
import { test } from 'node:test';
import { HistogramCell } from '../../src/metrics/cells.js';
import { measuredPort } from '../../src/metrics/measured-store.js';

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
