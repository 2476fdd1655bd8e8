import { Gauge, type Registry } from 'prom-client';
import type { ExpiryObserver } from '../expiry-timer.js';
import type { Reservations } from '../store/store.js';
import { CellCounter } from './cells.js';

/** Where the gauges read what is held: the store, asked when scraped. */
type HeldSource = Pick<Reservations, 'held'>;

/**
 * The reservations' metrics: what active reservations hold, read from the store when scraped (every
 * worker and instance reads the same store, so the cluster's figure is one's, not a sum), and the
 * reservations this process marked expired: each is marked by exactly one process (decisions 12.4),
 * so the sum over processes and instances is the store's total.
 */
export function reservationMetrics(registry: Registry): { follow: (source: HeldSource) => void; observer: ExpiryObserver } {
  let source: HeldSource | undefined;
  // One read of the store serves both gauges of a scrape: they are collected one after the other.
  let pending: Promise<{ active: number; units: number } | undefined> | undefined;
  const read = () => {
    pending ??= (source?.held() ?? Promise.resolve(undefined))
      // The store is unreachable: the last figures stay, and the scrape still answers.
      .catch(() => undefined)
      .finally(() => setImmediate(() => (pending = undefined)));
    return pending;
  };
  new Gauge({
    name: 'inventory_reservations_active',
    help: 'Active reservations (holding stock, not past their expiry), read from the store when scraped.',
    registers: [registry],
    aggregator: 'max',
    async collect() {
      const held = await read();
      if (held) this.set(held.active);
    },
  });
  new Gauge({
    name: 'inventory_reservations_held_units',
    help: 'Units active reservations hold, all pets together, read from the store when scraped.',
    registers: [registry],
    aggregator: 'max',
    async collect() {
      const held = await read();
      if (held) this.set(held.units);
    },
  });
  const expired = new CellCounter({
    name: 'inventory_reservations_expired_total',
    help: 'Reservations this process marked expired (each is marked by exactly one process, so a sum over instances is the total).',
    labelNames: [],
    registry,
  }).cell({});
  return {
    follow: (given) => (source = given),
    observer: { expired: (count) => (expired.value += count) },
  };
}
