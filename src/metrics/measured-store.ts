import { performance } from 'node:perf_hooks';
import type { InventoryStore } from '../store/store.js';
import type { ServiceMetrics } from './service-metrics.js';

/**
 * The store, with the time of each call observed by store operation and backend. Only made when
 * metrics are on; the calls are the store's own (a closure per call is nothing next to a query).
 */
export function measuredStore(store: InventoryStore, metrics: Pick<ServiceMetrics, 'storeCall'>): InventoryStore {
  const timed = <A extends unknown[], R>(operation: Exclude<keyof InventoryStore, 'backend'>, call: (...args: A) => Promise<R>) => {
    const cell = metrics.storeCall(operation, store.backend);
    return (...args: A): Promise<R> => {
      const started = performance.now();
      const done = () => cell.observe((performance.now() - started) / 1000);
      const result = call(...args);
      // The caller handles the outcome; this only times it.
      result.then(done, done);
      return result;
    };
  };
  return {
    backend: store.backend,
    listInventory: timed('listInventory', () => store.listInventory()),
    listInventoryPage: timed('listInventoryPage', (after: bigint | undefined, limit: number) => store.listInventoryPage(after, limit)),
    getEntry: timed('getEntry', (petId: bigint) => store.getEntry(petId)),
    applyChange: timed('applyChange', (change: Parameters<InventoryStore['applyChange']>[0]) => store.applyChange(change)),
    addItems: timed('addItems', (items: Parameters<InventoryStore['addItems']>[0]) => store.addItems(items)),
    importItems: timed('importItems', (source: Parameters<InventoryStore['importItems']>[0], plan: Parameters<InventoryStore['importItems']>[1]) =>
      store.importItems(source, plan),
    ),
    retireEntry: timed('retireEntry', (petId: bigint, options: Parameters<InventoryStore['retireEntry']>[1]) => store.retireEntry(petId, options)),
    listHistory: timed('listHistory', (petId: bigint, page: Parameters<InventoryStore['listHistory']>[1]) => store.listHistory(petId, page)),
    purgeIdempotencyRecords: timed('purgeIdempotencyRecords', (now: Date) => store.purgeIdempotencyRecords(now)),
    purgeHistory: timed('purgeHistory', (before: Date) => store.purgeHistory(before)),
    readVersion: timed('readVersion', () => store.readVersion()),
    changesSince: timed('changesSince', (after: number) => store.changesSince(after)),
    insertApiKey: timed('insertApiKey', (record: Parameters<InventoryStore['insertApiKey']>[0]) => store.insertApiKey(record)),
    insertFirstApiKey: timed('insertFirstApiKey', (record: Parameters<InventoryStore['insertFirstApiKey']>[0]) => store.insertFirstApiKey(record)),
    findApiKeyByHash: timed('findApiKeyByHash', (keyHash: string) => store.findApiKeyByHash(keyHash)),
    listApiKeys: timed('listApiKeys', () => store.listApiKeys()),
    revokeApiKey: timed('revokeApiKey', (id: string, at: Date) => store.revokeApiKey(id, at)),
    touchApiKey: timed('touchApiKey', (id: string, at: Date) => store.touchApiKey(id, at)),
    durability: () => store.durability(),
    ping: timed('ping', () => store.ping()),
    close: () => store.close(),
  };
}
