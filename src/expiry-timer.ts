import { EXPIRE_BATCH } from './domain/reservation.js';
import type { Reservations } from './store/store.js';

/**
 * How often each instance asks the store to mark the reservations past their expiry: well within
 * the second the service promises (decisions 12.4). A look with nothing due is one read of an
 * index range that is almost always empty.
 */
export const EXPIRY_INTERVAL_MS = 250;

/** Where its lines go (the app's logger). */
export interface ExpiryLog {
  warn(fields: object, message: string): void;
  info(fields: object, message: string): void;
}

/** Told how many reservations each run marked (the metrics). */
export interface ExpiryObserver {
  expired(count: number): void;
}

/** The expiry timer; stop() ends it (a run under way finishes, as the store closes). */
export interface ExpiryTimer {
  stop(): void;
  /** One run now, as the timer does it (for tests); resolves to how many reservations it marked. */
  runNow(): Promise<number>;
}

/**
 * Every `intervalMs`, marks expired the reservations past their expiry, with their events. Every
 * instance runs it; the store marks each reservation once across all of them (Reservations.expireDue),
 * and one that expired while every instance was down is marked at the first run after a start.
 * Runs never overlap; a run that leaves more due (past the store's batch) runs again at once. A
 * failing store is logged once when the failures begin and once when they end, not every 250 ms.
 */
export function scheduleExpiry(
  reservations: Pick<Reservations, 'expireDue'>,
  log: ExpiryLog,
  intervalMs = EXPIRY_INTERVAL_MS,
  observer?: ExpiryObserver,
): ExpiryTimer {
  let running: Promise<number> | undefined;
  let stopped = false;
  let failing = false;
  const run = async (): Promise<number> => {
    let marked = 0;
    for (;;) {
      const expired = await reservations.expireDue();
      marked += expired.length;
      // Counted batch by batch: a run that fails later has still marked these.
      if (expired.length > 0) observer?.expired(expired.length);
      if (expired.length > 0) log.info({ reservations: expired.map((r) => r.id) }, 'reservations expired');
      // A full batch may leave more behind it.
      if (expired.length < EXPIRE_BATCH || stopped) return marked;
    }
  };
  const runNow = () => {
    running ??= run()
      .then(
        (marked) => {
          if (failing) log.info({}, 'reservations expire again');
          failing = false;
          return marked;
        },
        (err: unknown) => {
          if (!failing && !stopped) log.warn({ err }, 'could not expire reservations; retrying');
          failing = true;
          return 0;
        },
      )
      .finally(() => {
        running = undefined;
      });
    return running;
  };
  const timer = setInterval(() => void runNow(), intervalMs).unref();
  // At once: reservations that expired while the service was down are marked first thing.
  void runNow();
  return {
    stop() {
      stopped = true;
      clearInterval(timer);
    },
    runNow,
  };
}
