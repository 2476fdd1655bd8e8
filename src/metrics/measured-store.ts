import { performance } from 'node:perf_hooks';
import type { Store } from '../store/store.js';
import type { HistogramCell } from './cells.js';
import type { ServiceMetrics } from './service-metrics.js';

/** Members not timed: what the server asks once at start, not work a request waits on; onAppended registers a listener and returns at once. */
const UNTIMED = new Set(['durability', 'onAppended']);

/**
 * The store, with the time of each call observed by member (the `operation` label) and backend.
 * Only made when metrics are on. Every function of every port is timed alike, so a member added
 * to a port is measured with no line here; a port added to the store is a type error here until
 * it is listed.
 */
export function measuredStore(store: Store, metrics: Pick<ServiceMetrics, 'storeCall'>): Store {
  const measured = <P extends object>(port: P): P => measuredPort(port, (member) => metrics.storeCall(member, store.backend));
  return {
    backend: store.backend,
    entries: measured(store.entries),
    changes: measured(store.changes),
    keys: measured(store.keys),
    history: measured(store.history),
    events: measured(store.events),
    webhooks: measured(store.webhooks),
    relays: measured(store.relays),
    maintenance: measured(store.maintenance),
    close: () => store.close(),
  };
}

/** A port whose functions observe their time in the cell of their name (one cell per member, looked up once). */
export function measuredPort<P extends object>(port: P, cellOf: (member: string) => HistogramCell): P {
  const measured: Record<string, unknown> = {};
  for (const member of membersOf(port)) {
    const value = (port as Record<string, unknown>)[member];
    measured[member] = typeof value === 'function' && !UNTIMED.has(member) ? timed(value.bind(port) as (...args: unknown[]) => unknown, cellOf(member)) : value;
  }
  return measured as P;
}

/** The port's members, its own and its class's (a port may be a plain object or an instance). */
function membersOf(port: object): string[] {
  const names = new Set<string>();
  for (let o: object | null = port; o !== null && o !== Object.prototype; o = Object.getPrototypeOf(o) as object | null) {
    for (const name of Object.getOwnPropertyNames(o)) if (name !== 'constructor') names.add(name);
  }
  return [...names];
}

/** The call, timed until its promise settles; a member that answers at once, without a promise (a subscription), is passed through untimed. */
function timed<A extends unknown[], R>(call: (...args: A) => R, cell: HistogramCell): (...args: A) => R {
  return (...args) => {
    const started = performance.now();
    const result = call(...args);
    if (!(result instanceof Promise)) return result;
    const done = () => cell.observe((performance.now() - started) / 1000);
    // The caller handles the outcome; this only times it.
    result.then(done, done);
    return result;
  };
}
