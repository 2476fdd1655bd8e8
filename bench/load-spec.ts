/** One load to drive against one server. */
export interface LoadSpec {
  /** The server's base URL, e.g. http://127.0.0.1:41234 */
  baseUrl: string;
  method: 'GET' | 'PATCH';
  /** The whole Authorization header value. */
  authorization: string;
  /** PATCH: each request sets a random quantity on a random pet from 1 to petCount. */
  petCount: number;
  connections: number;
  /** Load before the measured window, not counted: warms the JIT and absorbs the previous load's abandoned requests. */
  warmupSeconds: number;
  /** The measured window. */
  durationSeconds: number;
  /** A fixed overall rate in requests per second; full speed when absent. */
  rate?: number;
}

/** What one load measured; only 2xx answers count as throughput. */
export interface LoadResult {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  /** 2xx answers. */
  ok: number;
  /** Non-2xx answers plus connection errors and timeouts. */
  failed: number;
  /** Share of one core the load generator used over the whole load; near 1 means it, not the server, set the pace. */
  generatorCpu?: number;
}

export const GET_PATH = '/v1/inventory';

/** Nearest-rank percentile of ascending values; 0 when there are none. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** The random PATCH target and body, the same for every load generator. */
export function randomPatch(petCount: number): { path: string; body: string } {
  const petId = 1 + Math.floor(Math.random() * petCount);
  return { path: `/v1/inventory/${petId}`, body: `{"quantity":${Math.floor(Math.random() * 1000)}}` };
}
