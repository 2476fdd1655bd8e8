import { RESERVATION_TTL_MAX } from '../src/schemas/values.js';

/**
 * What a load sends, named by its HTTP method but RESERVE. GET: the list; PATCH: a random pet's
 * quantity; POST: an adjustment of a random pet (POST /v1/inventory/{id}/adjustments); RESERVE: a
 * reservation of 1 of a random pet (POST /v1/reservations).
 */
export type LoadMethod = 'GET' | 'PATCH' | 'POST' | 'RESERVE';

/** The HTTP method of each load's requests. */
export const HTTP_METHOD = { GET: 'GET', PATCH: 'PATCH', POST: 'POST', RESERVE: 'POST' } as const satisfies Record<LoadMethod, string>;

/** One load to drive against one server. */
export interface LoadSpec {
  /** The server's base URL, e.g. http://127.0.0.1:41234 */
  baseUrl: string;
  method: LoadMethod;
  /** The whole Authorization header value. */
  authorization: string;
  /** PATCH, POST and RESERVE: each request changes (or holds) a random pet from 1 to petCount. */
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
  /** The paced load's failures by reason ("503 STORE_TIMEOUT", "timed out"), most first, for a row that says why. */
  failures?: Record<string, number>;
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

/** A random adjustment, +1 or -1 at random, of a random pet: the same for every load generator. */
export function randomAdjustment(petCount: number): { path: string; body: string } {
  const petId = 1 + Math.floor(Math.random() * petCount);
  return { path: `/v1/inventory/${petId}/adjustments`, body: `{"delta":${Math.random() < 0.5 ? -1 : 1}}` };
}

export const RESERVATIONS_PATH = '/v1/reservations';

/**
 * A reservation of 1 of a random pet, the same for every load generator: held for as long as the
 * API allows, so that no hold of a run lapses during it, and the store's sweep of lapsed holds has
 * nothing to mark while the loads run.
 */
export function randomReservation(petCount: number): { path: string; body: string } {
  const petId = 1 + Math.floor(Math.random() * petCount);
  return { path: RESERVATIONS_PATH, body: `{"items":[{"petId":${petId},"quantity":1}],"ttlSeconds":${RESERVATION_TTL_MAX}}` };
}

/** The path and body of a request of this load (a fresh random one for a change), the same for every load generator. */
export function loadRequest(spec: Pick<LoadSpec, 'method' | 'petCount'>): { path: string; body: string | undefined } {
  if (spec.method === 'PATCH') return randomPatch(spec.petCount);
  if (spec.method === 'POST') return randomAdjustment(spec.petCount);
  if (spec.method === 'RESERVE') return randomReservation(spec.petCount);
  return { path: GET_PATH, body: undefined };
}
