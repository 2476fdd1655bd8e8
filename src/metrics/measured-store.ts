import { performance } from 'node:perf_hooks';
import { PORT_NAMES, type PortName, type Store } from '../store/store.js';
import type { HistogramCell } from './cells.js';
import type { ServiceMetrics } from './service-metrics.js';

/** Members not timed: what the server asks once at start, not work a request waits on; onAppended and onEndpointsChanged register a listener and return at once. */
const UNTIMED = new Set(['durability', 'onAppended', 'onEndpointsChanged']);

/**
 * The store, with the time of each call observed by member (the `operation` label) and backend.
 * Only made when metrics are on. Every function of every port (PORT_NAMES) is timed alike, so a
 * member or a port added to the store is measured with no line here.
 */
export function measuredStore(store: Store, metrics: Pick<ServiceMetrics, 'storeCall'>): Store {
  const cellOf = (member: string) => metrics.storeCall(member, store.backend);
  const ports = Object.fromEntries(PORT_NAMES.map((name) => [name, measuredPort(store[name], cellOf)])) as Pick<Store, PortName>;
  return { ...ports, backend: store.backend, close: () => store.close() };
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
