import { UNIT_MS } from './domain/duration.js';
import type { Config } from './config.js';
import type { Events, Maintenance } from './store/store.js';

/** How often each instance deletes expired idempotency records and, with a retention, old history and events. */
export const PRUNE_INTERVAL_MS = 60 * 60 * 1000;

/**
 * The first run comes this long after start at most (at a random moment, so instances and workers
 * started together do not all run at once): an instance restarted more often than hourly still
 * cleans up.
 */
export const FIRST_PRUNE_WITHIN_MS = 60 * 1000;

/** Where its lines go (the app's logger). */
export interface PruneLog {
  warn(fields: object, message: string): void;
  info(fields: object, message: string): void;
}

/** The pruning timer; stop() ends it (a run under way stops at its next step, as the store closes). */
export interface PruneTimer {
  stop(): void;
  /** One run now, as the timer does it (for tests); resolves when it is over. */
  runNow(): Promise<void>;
}

/**
 * Every `intervalMs`, deletes what the store need not keep: expired idempotency records (a lookup
 * ignores them: dead weight), when HISTORY_RETENTION_DAYS is set history older than that, and when
 * EVENTS_RETENTION_DAYS is set (7 by default) events and webhook delivery attempts older than that. Runs never overlap; each
 * deletes in short transactions (see the store's purge members), so the writes of requests
 * interleave. With several instances each runs it: the steps are cheap and idempotent.
 */
export function schedulePruning(
  store: { maintenance: Pick<Maintenance, 'purgeIdempotencyRecords' | 'purgeHistory' | 'purgeDeliveries'>; events: Pick<Events, 'purgeEvents'> },
  settings: Pick<Config, 'historyRetentionDays' | 'eventsRetentionDays'>,
  log: PruneLog,
  intervalMs = PRUNE_INTERVAL_MS,
  firstRunWithinMs = FIRST_PRUNE_WITHIN_MS,
): PruneTimer {
  let running: Promise<void> | undefined;
  let stopped = false;
  const failed = (what: string) => (err: unknown) => {
    if (!stopped) log.warn({ err }, `could not purge ${what}`);
  };
  const olderThan = (now: Date, days: number) => new Date(now.getTime() - days * UNIT_MS.d);
  const run = async () => {
    const now = new Date();
    const records = await store.maintenance.purgeIdempotencyRecords(now).catch(failed('idempotency records'));
    let rows: number | void = 0;
    if (settings.historyRetentionDays > 0 && !stopped) {
      rows = await store.maintenance.purgeHistory(olderThan(now, settings.historyRetentionDays)).catch(failed('history'));
    }
    let events: number | void = 0;
    let deliveries: number | void = 0;
    if (settings.eventsRetentionDays > 0 && !stopped) {
      events = await store.events.purgeEvents(olderThan(now, settings.eventsRetentionDays)).catch(failed('events'));
    }
    // The webhook delivery log is kept as long as the events it tells of.
    if (settings.eventsRetentionDays > 0 && !stopped) {
      deliveries = await store.maintenance.purgeDeliveries(olderThan(now, settings.eventsRetentionDays)).catch(failed('webhook deliveries'));
    }
    if (records || rows || events || deliveries) {
      log.info({ idempotencyRecords: records ?? 0, historyRows: rows ?? 0, events: events ?? 0, webhookDeliveries: deliveries ?? 0 }, 'housekeeping deleted old rows');
    }
  };
  const runNow = () => {
    running ??= run().finally(() => {
      running = undefined;
    });
    return running;
  };
  const timer = setInterval(() => void runNow(), intervalMs).unref();
  const first = setTimeout(() => void runNow(), Math.floor(Math.random() * Math.min(firstRunWithinMs, intervalMs))).unref();
  return {
    stop() {
      stopped = true;
      clearInterval(timer);
      clearTimeout(first);
    },
    runNow,
  };
}
