import { collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import type { EventHub, EventHubObserver } from '../cache/event-hub.js';
import type { ExpiryObserver } from '../expiry-timer.js';
import type { ListCacheObserver } from '../cache/list-cache.js';
import { EVENT_TYPES, type EventType } from '../domain/event.js';
import { OPERATIONS } from '../operations/index.js';
import type { WebhookListSource } from '../operations/list-webhooks.js';
import { OTHER_OPERATIONS } from '../pipeline/context.js';
import type { RequestObserver } from '../pipeline/pipeline.js';
import { BATCH_MAX, batchChannel } from '../store/group-commit.js';
import type { Store } from '../store/store.js';
import type { RelayObserver } from '../relay/relay.js';
import type { WebhookObserver } from '../webhooks/context.js';
import { CellCounter, CellHistogram, type CounterCell, type HistogramCell } from './cells.js';
import { relayMetrics } from './relay-metrics.js';
import { reservationMetrics } from './reservation-metrics.js';
import { webhookMetrics } from './webhook-metrics.js';

/** Seconds: the fast lane answers in well under a millisecond, a frozen store in seconds. */
const DURATION_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Seconds from a change's commit to its event on the streams: a poll is 0.2 s, a promise 1 s. */
const LAG_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
/** Changes per batch, up to the group commit's most. */
const BATCH_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, BATCH_MAX];
/** Statuses are counted in an array indexed by the status code. */
const STATUS_LIMIT = 600;

/** Every operation label a request can carry; anything else is counted as `other`. */
export const OPERATION_LABELS: readonly string[] = [...OPERATIONS.map((op) => op.operationId), ...OTHER_OPERATIONS];

/** The cells of one operation label, made at start: a request finds them with one Map lookup. */
interface OperationCells {
  label: string;
  duration: HistogramCell;
  /** By status code, made at a status's first use. */
  byStatus: (CounterCell | undefined)[];
}

/**
 * The service's metrics, in a registry of their own (never the global one): what the pipeline,
 * the store, the group commit and the list cache report, and the process's (prom-client's default
 * metrics). No label value comes from a request: operations are the code's words, statuses numbers.
 * No key, key id or path is ever a label. Made only when METRICS_PORT is set; without it nothing is
 * measured at all.
 */
export class ServiceMetrics implements RequestObserver {
  readonly registry = new Registry();
  readonly #requests: CellCounter<'operation' | 'status'>;
  readonly #byOperation = new Map<string, OperationCells>();
  readonly #other: OperationCells;
  readonly #storeDurations: CellHistogram<'operation' | 'backend'>;
  readonly #rateLimited: CellCounter<'reason'>;
  readonly #rateLimitedByReason = new Map<string, CounterCell>();
  readonly #listHit: CounterCell;
  readonly #listMiss: CounterCell;
  readonly #batches: HistogramCell;
  readonly #onBatch: (size: unknown) => void;
  #entries: (() => Promise<number>) | undefined;
  readonly #eventsRead: Record<EventType, CounterCell>;
  readonly #streamLag: HistogramCell;
  #events: { hub: Pick<EventHub, 'head'>; streams: () => number } | undefined;
  readonly #webhooks: ReturnType<typeof webhookMetrics>;
  readonly #reservations: ReturnType<typeof reservationMetrics>;
  /** For the event relay (EVENTS_NATS_URL): each event published, and NATS out of reach. */
  readonly relay: RelayObserver;

  constructor() {
    const registry = this.registry;
    this.#requests = new CellCounter({
      name: 'inventory_http_requests_total',
      help: 'Requests answered, by operation (operationId, or health, ready, not_found, method_not_allowed, undecodable_url, cors_preflight, docs, other) and status (499: the client left mid-request).',
      labelNames: ['operation', 'status'],
      registry,
    });
    const durations = new CellHistogram({
      name: 'inventory_http_request_duration_seconds',
      help: 'Time from a request’s arrival to its answer, by operation.',
      labelNames: ['operation'],
      buckets: DURATION_BUCKETS,
      registry,
    });
    for (const label of OPERATION_LABELS) {
      this.#byOperation.set(label, { label, duration: durations.cell({ operation: label }), byStatus: new Array<CounterCell | undefined>(STATUS_LIMIT).fill(undefined) });
    }
    this.#other = this.#byOperation.get('other')!;
    this.#storeDurations = new CellHistogram({
      name: 'inventory_store_duration_seconds',
      help: 'Time of each call to the store, by store operation and backend (failures included).',
      labelNames: ['operation', 'backend'],
      buckets: DURATION_BUCKETS,
      registry,
    });
    this.#batches = new CellHistogram({
      name: 'inventory_group_commit_batch_size',
      help: 'Changes of quantity committed together, per batch of the group commit (one transaction, one fsync).',
      labelNames: [],
      buckets: BATCH_BUCKETS,
      registry,
    }).cell({});
    const listReads = new CellCounter({
      name: 'inventory_list_cache_reads_total',
      help: 'Reads of the store by the list cache (one serves every list request waiting for it): hit, nothing changed and the cached bytes are served; miss, the list was re-rendered.',
      labelNames: ['result'],
      registry,
    });
    this.#listHit = listReads.cell({ result: 'hit' });
    this.#listMiss = listReads.cell({ result: 'miss' });
    this.#rateLimited = new CellCounter({
      name: 'inventory_rate_limited_total',
      help: 'Requests refused 429 rate_limited, by reason: the rule that refused them (failed_authentication_throttle: too many failed authentications from the address).',
      labelNames: ['reason'],
      registry,
    });
    const entries = () => this.#entries;
    new Gauge({
      name: 'inventory_entries',
      help: 'Inventory entries in the store, read when scraped.',
      registers: [registry],
      // Every worker reads the same store: the cluster's figure is one worker's, not their sum.
      aggregator: 'max',
      async collect() {
        const count = entries();
        if (!count) return;
        try {
          this.set(await count());
        } catch {
          // The store is unreachable: the last figure stays, and the scrape still answers.
        }
      },
    });
    const eventsRead = new CellCounter({
      name: 'inventory_events_appended_total',
      help:
        'Events appended to the event log, by type, as this process read them from the log since it started (it follows the log while metrics are on): ' +
        'the changes of every process and instance and of the CLI, not only this one’s; every worker reads the same log, so a cluster reports the largest count.',
      labelNames: ['type'],
      registry,
      aggregator: 'max',
    });
    this.#eventsRead = Object.fromEntries(EVENT_TYPES.map((type) => [type, eventsRead.cell({ type })])) as Record<EventType, CounterCell>;
    this.#streamLag = new CellHistogram({
      name: 'inventory_event_stream_lag_seconds',
      help:
        'Time from an event’s occurredAt (the store’s clock at commit) to its writing on this process’s live streams (this clock), once per event ' +
        'fanned out; replays of older events are not counted. Clock skew between the database and this host shows here.',
      labelNames: [],
      buckets: LAG_BUCKETS,
      registry,
    }).cell({});
    const events = () => this.#events;
    new Gauge({
      name: 'inventory_events_head',
      help: 'The newest event seq, as this process last read the log (every 0.2 s while metrics are on).',
      registers: [registry],
      // Every worker reads the same log.
      aggregator: 'max',
      collect() {
        const head = events()?.hub.head;
        if (head !== undefined) this.set(head);
      },
    });
    new Gauge({
      name: 'inventory_event_streams',
      help: 'Event streams (GET /v1/events/stream) open on this process, up to MAX_EVENT_STREAMS.',
      registers: [registry],
      collect() {
        this.set(events()?.streams() ?? 0);
      },
    });
    this.#webhooks = webhookMetrics(registry);
    this.relay = relayMetrics(registry);
    this.#reservations = reservationMetrics(registry);
    collectDefaultMetrics({ register: registry });
    this.#onBatch = (size) => this.#batches.observe(size as number);
    batchChannel.subscribe(this.#onBatch);
  }

  /** Where the entries gauge reads its figure (the list cache: usually one cheap query). */
  countEntriesWith(count: () => Promise<number>): void {
    this.#entries = count;
  }

  /** Where the event gauges read their figures: the process's hub and its open streams. */
  followEvents(events: { hub: Pick<EventHub, 'head'>; streams: () => number }): void {
    this.#events = events;
  }

  /** Where the webhook gauges read the endpoints and the head (the store). */
  followWebhooks(store: WebhookListSource): void {
    this.#webhooks.follow(store);
  }

  /** Where the reservation gauges read what is held (the store). */
  followReservations(reservations: Pick<Store['reservations'], 'held'>): void {
    this.#reservations.follow(reservations);
  }

  /** For the expiry timer: the reservations this process marked expired. */
  get reservations(): ExpiryObserver {
    return this.#reservations.observer;
  }

  /** For the webhook dispatcher: each attempt, and each delivery's latency. */
  get webhooks(): WebhookObserver {
    return this.#webhooks.observer;
  }

  /** For the event hub: each page of the log it read, and when it fanned it out to the streams. */
  readonly eventHub: EventHubObserver = {
    read: (events, fannedOutAt) => {
      for (const event of events) {
        this.#eventsRead[event.type].value++;
        if (fannedOutAt !== undefined) this.#streamLag.observe(Math.max(0, (fannedOutAt - event.occurredAt.getTime()) / 1000));
      }
    },
    counted: (byType) => {
      for (const [type, n] of Object.entries(byType) as [EventType, number][]) this.#eventsRead[type].value += n;
    },
  };

  /** For the pipeline, every request of both lanes: a Map lookup, an array index and a few additions. */
  completed(operation: string, status: number, seconds: number): void {
    const cells = this.#byOperation.get(operation) ?? this.#other;
    cells.duration.observe(seconds);
    const index = status >= 0 && status < STATUS_LIMIT ? status : 0;
    const counter = cells.byStatus[index] ?? (cells.byStatus[index] = this.#requests.cell({ operation: cells.label, status: String(status) }));
    counter.value++;
  }

  rateLimited(reason: string): void {
    let cell = this.#rateLimitedByReason.get(reason);
    if (!cell) {
      cell = this.#rateLimited.cell({ reason });
      this.#rateLimitedByReason.set(reason, cell);
    }
    cell.value++;
  }

  /** For the list cache. */
  readonly listCache: ListCacheObserver = {
    read: (changed) => {
      if (changed) this.#listMiss.value++;
      else this.#listHit.value++;
    },
  };

  /** The cell of one store operation's calls, for measuredStore. */
  storeCall(operation: string, backend: Store['backend']): HistogramCell {
    return this.#storeDurations.cell({ operation, backend });
  }

  /** The Prometheus text of every metric. */
  render(): Promise<string> {
    return this.registry.metrics();
  }

  /** Stops listening to the group commit. */
  close(): void {
    batchChannel.unsubscribe(this.#onBatch);
  }
}
