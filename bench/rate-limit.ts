import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { createDatabase, type Backend } from './databases.js';
import type { LoadGenerator } from './load.js';
import type { BenchOptions } from './options.js';
import { ratio, type Section } from './report.js';
import { GET_CONNECTIONS } from './scenarios.js';
import { seedDatabase } from './seed.js';
import { alternateRounds, bestRun, eachRun, roundsOf, roundsText, type Side } from './side-by-side.js';
import { startServer } from './servers.js';

/** The Redis the shared rate limit runs against; BENCH_REDIS_URL names another. */
const BENCH_REDIS_URL = process.env.BENCH_REDIS_URL || 'redis://127.0.0.1:6379';

/**
 * GET of the list with the rate limit shared through Redis (REDIS_URL) against the same build
 * counting alone, both up at once on databases seeded alike, loads alternated over rounds. The
 * limit is the bench's, far above what a run sends, so every request is admitted and the figures
 * carry what the sharing costs: the allowances taken from Redis and used from memory.
 */
export async function rateLimitSection(backend: Backend, title: string, options: BenchOptions, load: LoadGenerator): Promise<Section> {
  const skip = await redisSkipReason();
  if (skip) return { title, rows: [], notes: [`Redis: skipped (${skip})`] };
  const size = options.sizes[0];
  const scenario = `GET list, ${size.toLocaleString('en-US')} entries`;
  const prefix = `bench-ratelimit-${randomUUID()}:`;
  const notes: string[] = [];
  const sides: Side[] = [];
  try {
    for (const [label, env] of [
      ['service, rate limit shared through Redis', { REDIS_URL: BENCH_REDIS_URL, REDIS_KEY_PREFIX: prefix }],
      ['service, rate limit counted alone', {}],
    ] as const) {
      const databaseUrl = await createDatabase(backend, `ratelimit_${sides.length}`);
      const key = await seedDatabase(databaseUrl, size);
      sides.push({ label, key, server: await startServer('service', { databaseUrl, key, env }), runs: [] });
    }
    await alternateRounds(sides, scenario, backend, options, load, notes, { method: 'GET', petCount: size, connections: GET_CONNECTIONS });
    // The comparison means something only if the one server took its allowances from Redis.
    const windows = await redisKeys(prefix);
    if (windows === 0) throw new Error('the server with REDIS_URL left no window in Redis: it counted alone');
    const [shared, alone] = sides as [Side, Side];
    notes.push(
      `${scenario} (${backend}): both servers are the same build, up at once, ${GET_CONNECTIONS} connections, one key; ` +
        `one uncounted warm-up round, then ${roundsText(roundsOf(options))} alternated (order swapped each round), the best of each shown; ` +
        `req/s per round: shared ${eachRun(shared)}; alone ${eachRun(alone)}. Redis held ${windows} window(s) of the key afterwards`,
    );
    return {
      title,
      rows: [
        { scenario, server: alone.label, result: bestRun(alone), checks: [] },
        { scenario, server: shared.label, result: bestRun(shared), checks: [ratio(bestRun(shared).requestsPerSecond / bestRun(alone).requestsPerSecond, 'counted alone')] },
      ],
      notes,
    };
  } finally {
    await Promise.all(sides.map((s) => s.server.stop()));
    await redisKeys(prefix, true).catch(() => undefined);
  }
}

/** Why Redis cannot be used, or undefined when it answers. */
async function redisSkipReason(): Promise<string | undefined> {
  const redis = new Redis(BENCH_REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 2000, retryStrategy: () => null });
  try {
    await redis.connect();
    await redis.ping();
    return undefined;
  } catch (err) {
    return `${err instanceof Error ? err.message : String(err)}; set BENCH_REDIS_URL`;
  } finally {
    redis.disconnect();
  }
}

/** How many keys the run left under `prefix`; with `remove`, removes them too. */
async function redisKeys(prefix: string, remove = false): Promise<number> {
  const redis = new Redis(BENCH_REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0 });
  try {
    await redis.connect();
    const keys = await redis.keys(`${prefix}*`);
    if (remove && keys.length > 0) await redis.del(...keys);
    return keys.length;
  } finally {
    redis.disconnect();
  }
}
