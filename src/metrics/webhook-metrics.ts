import { Gauge, type Registry } from 'prom-client';
import { backlogOf } from '../domain/webhook.js';
import type { WebhookListSource } from '../operations/list-webhooks.js';
import type { AttemptResult, WebhookObserver } from '../webhooks/context.js';
import { CellCounter, CellHistogram, type HistogramCell } from './cells.js';

/** Seconds from a change's commit to a receiver's 2xx: a flush is 0.1 s, a retry minutes to hours. */
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600];

/**
 * The webhook metrics: attempts by endpoint and result and the delivery latency (this process's
 * deliveries), and each endpoint's backlog and state, read from the store when scraped (the
 * same in every process). The endpoint label is the endpoint's id: operators make endpoints, never
 * a request, so the label's values stay few.
 */
export function webhookMetrics(registry: Registry): { observer: WebhookObserver; follow(store: WebhookListSource): void } {
  const attempts = new CellCounter({
    name: 'inventory_webhook_attempts_total',
    help: 'Webhook delivery attempts made by this process, by endpoint id and result: delivered (2xx), http_error (another status), error (a timeout, a network error or a refused address).',
    labelNames: ['endpoint', 'result'],
    registry,
  });
  const latency: HistogramCell = new CellHistogram({
    name: 'inventory_webhook_delivery_latency_seconds',
    help: 'Time from an event’s occurredAt (the store’s clock at commit) to its receiver’s 2xx, for the events this process delivered; retries included.',
    labelNames: [],
    buckets: LATENCY_BUCKETS,
    registry,
  }).cell({});
  let source: WebhookListSource | undefined;
  let read: Promise<{ id: string; backlog: number; enabled: boolean; retrying: number }[]> | undefined;
  // One read of the store serves both gauges of one scrape.
  const endpoints = () =>
    (read ??= (async () => {
      if (!source) return [];
      const [list, head] = await Promise.all([source.webhookEndpoints.listEndpoints(), source.events.head()]);
      return list.map((e) => ({ id: e.id, backlog: backlogOf(head, e), enabled: e.enabled, retrying: e.retrying.length }));
    })().finally(() => setImmediate(() => (read = undefined))));
  /** A gauge with one value per endpoint, read from the store when scraped. */
  const perEndpoint = (name: string, help: string, value: (e: { backlog: number; enabled: boolean; retrying: number }) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['endpoint'],
      registers: [registry],
      // Every process reads the same store.
      aggregator: 'max',
      async collect() {
        try {
          const list = await endpoints();
          this.reset();
          for (const e of list) this.set({ endpoint: e.id }, value(e));
        } catch {
          // The store is unreachable: the last figures stay, and the scrape still answers.
        }
      },
    });
  perEndpoint(
    'inventory_webhook_backlog_events',
    'Events each webhook endpoint has yet to receive (the log’s head minus the seq it was delivered up to), read from the store when scraped; a disabled endpoint’s backlog grows.',
    (e) => e.backlog,
  );
  perEndpoint(
    'inventory_webhook_retrying_events',
    'Events of each webhook endpoint waiting for a retry after a failure, as last recorded; each holds back only its own pet’s later events.',
    (e) => e.retrying,
  );
  perEndpoint('inventory_webhook_endpoint_enabled', 'Whether each webhook endpoint is enabled (1) or disabled (0: by an operator, a 410, or retries used up).', (e) => (e.enabled ? 1 : 0));
  const byEndpoint = new Map<string, Record<AttemptResult, { value: number }>>();
  return {
    observer: {
      attempted(endpointId, result) {
        let cells = byEndpoint.get(endpointId);
        if (!cells) {
          const cell = (r: AttemptResult) => attempts.cell({ endpoint: endpointId, result: r });
          cells = { delivered: cell('delivered'), http_error: cell('http_error'), error: cell('error') };
          byEndpoint.set(endpointId, cells);
        }
        cells[result].value++;
      },
      delivered(latencyMs) {
        latency.observe(Math.max(0, latencyMs / 1000));
      },
    },
    follow(store) {
      source = store;
    },
  };
}
