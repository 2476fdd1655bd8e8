import { Redis } from 'ioredis';
import type { SharedCounts, WindowCount } from './rate-limiter.js';

/** A command Redis has not answered in this long fails, and the counts stay local until it answers again. */
const COMMAND_TIMEOUT_MS = 1000;
/** Reconnection attempts back off up to this interval, and go on for as long as the process runs. */
const MAX_RECONNECT_DELAY_MS = 2000;

/** Where the transitions are told: one line when Redis goes away, one when it is back, never one per request. */
export interface RedisCountsLog {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

/**
 * The rate limit's counts, added up by every instance and worker in Redis: one INCRBY per key
 * and window, each key expiring after its window, all in one pipeline per round. Redis keys name
 * the API key by its id, never by key material. Commands fail at once while disconnected (no
 * offline queue): the limiter then keeps its counts and sends later, so a Redis outage never
 * holds a request.
 */
export function redisCounts(url: string, keyPrefix: string, log: RedisCountsLog): SharedCounts {
  const redis = new Redis(url, {
    keyPrefix,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: COMMAND_TIMEOUT_MS,
    connectTimeout: COMMAND_TIMEOUT_MS * 2,
    retryStrategy: (attempt) => Math.min(attempt * 100, MAX_RECONNECT_DELAY_MS),
  });
  let state: 'starting' | 'up' | 'down' | 'closed' = 'starting';
  const up = () => {
    if (state === 'up' || state === 'closed') return;
    log.info({}, state === 'starting' ? 'rate limit: counts shared through Redis' : 'rate limit: Redis is back; counts shared again');
    state = 'up';
  };
  const down = (err: unknown) => {
    if (state === 'down' || state === 'closed') return;
    state = 'down';
    // The message only (a connection refused, a timeout): never the URL, which may hold a password.
    const reason = err instanceof Error ? err.message : String(err);
    log.warn({ reason }, 'rate limit: Redis unreachable; each process counts on its own until it is back');
  };
  redis.on('ready', up);
  redis.on('error', down);
  redis.on('close', () => down(new Error('connection closed')));

  return {
    ready: () => redis.status === 'ready',
    async add(batch: readonly WindowCount[]): Promise<number[]> {
      const pipeline = redis.pipeline();
      for (const { keyId, window, count, expireAt } of batch) {
        const key = `ratelimit:${keyId}:${window}`;
        pipeline.incrby(key, count).pexpireat(key, expireAt);
      }
      try {
        const results = (await pipeline.exec()) ?? [];
        const totals = batch.map((_, i) => {
          const [err, total] = results[i * 2] ?? [new Error('no reply')];
          if (err) throw err;
          return Number(total);
        });
        up();
        return totals;
      } catch (err) {
        down(err);
        throw err;
      }
    },
    async close(): Promise<void> {
      state = 'closed';
      redis.disconnect();
    },
  };
}
