import { openStore } from '../../src/store/sqlite/open.js';

/**
 * A process of its own holding webhook leases on a SQLite file, as a cluster worker would (started
 * with fork by test/store/webhooks.test.ts): told to, it leases as `holder` and answers with the ids
 * it holds, or gives its leases up and answers. Arguments: the file, the holder.
 */

/** A message to the process: lease once, release every lease, or close the store and exit. */
export type LeaseOrder = { lease: number } | 'release' | 'exit';
/** The answer to an order: the ids the holder holds now. */
export interface LeaseAnswer {
  ids: string[];
}

const [filename, holder] = process.argv.slice(2);
if (filename === undefined || holder === undefined) throw new Error('usage: lease-holder FILE HOLDER');
const store = openStore(filename);

process.on('message', (order: LeaseOrder) => {
  void (async () => {
    if (order === 'exit') {
      await store.close();
      process.disconnect();
      return;
    }
    if (order === 'release') {
      await store.webhookDeliveries.releaseLeases(holder);
      process.send!({ ids: [] } satisfies LeaseAnswer);
      return;
    }
    const held = await store.webhookDeliveries.leaseEndpoints(holder, order.lease);
    process.send!({ ids: held.map((e) => e.id) } satisfies LeaseAnswer);
  })();
});
process.send!('ready');
