import { Redis } from 'ioredis';
import type { Allowance, AllowanceAsk, SharedAllowances } from './allowance.js';
import { GIVE_BACK_SCRIPT, SHARE_OF_LEFT, TAKE_SCRIPT } from './allowance-scripts.js';

/** A step Redis has not answered in this long fails, and the limiter decides alone until Redis answers again. */
const COMMAND_TIMEOUT_MS = 1000;
/** Reconnection attempts back off up to this interval, and go on for as long as the process runs. */
const MAX_RECONNECT_DELAY_MS = 2000;

/** Where the transitions are told: one line when Redis goes away, one when it is back, never one per request. */
export interface RedisAllowancesLog {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

/** The client with the two scripts defined on it (ioredis loads each once, then calls it by its SHA). */
type ScriptedRedis = Redis & {
  rateLimitTake(key: string, limit: number, owed: number, min: number, want: number, expireAt: number, share: number): Promise<[number, number]>;
  rateLimitGiveBack(key: string, count: number): Promise<number>;
};

/**
 * The rate limit's windows, shared by every instance and worker in Redis: one counter per key and
 * window, changed only by the two scripts, each one atomic step. Redis keys name the API key by
 * its id, never by key material. Steps fail at once while disconnected (no offline queue), and
 * after COMMAND_TIMEOUT_MS when Redis does not answer: the limiter then decides alone, so a Redis
 * outage never holds a request longer than that, nor fails one.
 */
export function redisAllowances(url: string, keyPrefix: string, log: RedisAllowancesLog): SharedAllowances {
  const redis = new Redis(url, {
    keyPrefix,
    enableOfflineQueue: false,
    // The steps of every key sent in one tick go in one round trip.
    enableAutoPipelining: true,
    maxRetriesPerRequest: 0,
    commandTimeout: COMMAND_TIMEOUT_MS,
    connectTimeout: COMMAND_TIMEOUT_MS * 2,
    retryStrategy: (attempt) => Math.min(attempt * 100, MAX_RECONNECT_DELAY_MS),
    scripts: {
      rateLimitTake: { lua: TAKE_SCRIPT, numberOfKeys: 1 },
      rateLimitGiveBack: { lua: GIVE_BACK_SCRIPT, numberOfKeys: 1 },
    },
  }) as ScriptedRedis;
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
  const keyOf = (keyId: string, window: number) => `ratelimit:${keyId}:${window}`;

  return {
    ready: () => redis.status === 'ready',
    async take({ keyId, window, limit, owed, min, want, expireAt }: AllowanceAsk): Promise<Allowance> {
      try {
        const [granted, taken] = await redis.rateLimitTake(keyOf(keyId, window), limit, owed, min, want, expireAt, SHARE_OF_LEFT);
        up();
        return { granted: Number(granted), taken: Number(taken) };
      } catch (err) {
        down(err);
        throw err;
      }
    },
    async giveBack(keyId: string, window: number, count: number): Promise<void> {
      await redis.rateLimitGiveBack(keyOf(keyId, window), count);
    },
    async close(): Promise<void> {
      state = 'closed';
      redis.disconnect();
    },
  };
}
