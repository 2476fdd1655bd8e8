import { Gauge, type Registry } from 'prom-client';
import type { RelayObserver } from '../relay/relay.js';
import { CellCounter } from './cells.js';

/**
 * The event relay's metrics (EVENTS_NATS_URL): events this process published to the stream, and
 * whether NATS is out of reach for it. Only the instance holding the relay's lease publishes, so a
 * sum over instances is the stream's rate, and the outage gauge of the others stays 0.
 */
export function relayMetrics(registry: Registry): RelayObserver {
  const published = new CellCounter({
    name: 'inventory_events_published_total',
    help: 'Change events this process published to the NATS JetStream stream and the stream acked (a republished one it dropped as a duplicate included).',
    labelNames: [],
    registry,
  }).cell({});
  let down = 0;
  new Gauge({
    name: 'inventory_events_nats_outage',
    help: '1 while this process holds the event relay and cannot publish to NATS (publishing waits and resumes from its position), else 0.',
    registers: [registry],
    aggregator: 'max',
    collect() {
      this.set(down);
    },
  });
  return {
    published: (count) => (published.value += count),
    outage: (isDown) => (down = isDown ? 1 : 0),
  };
}
