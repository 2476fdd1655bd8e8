import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RESERVATION_TTL_MAX } from '../src/schemas/values.js';
import { GET_PATH, RESERVATIONS_PATH, type LoadMethod, type LoadResult, type LoadSpec } from './load-spec.js';
import { spawnChild, type Core } from './processes.js';

/** Prints one machine-readable line at the end; latencies are in microseconds. */
const DONE = `
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("WRK_RESULT %d %d %d %d %d %d\\n", summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(99), e.connect + e.read + e.write + e.timeout, e.status))
end
`;

/** Random numbers seeded per thread, so threads do not repeat each other; JSON bodies. */
const SEEDED = `
local threads = 0
setup = function(thread) threads = threads + 1; thread:set("seed", threads) end
init = function(args) math.randomseed(os.time() * 1000 + seed) end
wrk.headers["Content-Type"] = "application/json"
`;

/** Random pet and quantity per request (load-spec.ts randomPatch). */
function patchScript(petCount: number): string {
  return `${SEEDED}
request = function()
  local path = "/v1/inventory/" .. math.random(1, ${petCount})
  return wrk.format("PATCH", path, nil, '{"quantity":' .. math.random(0, 999) .. '}')
end
`;
}

/** Random pet, +1 or -1 at random, per request (load-spec.ts randomAdjustment). */
function adjustmentScript(petCount: number): string {
  return `${SEEDED}
request = function()
  local path = "/v1/inventory/" .. math.random(1, ${petCount}) .. "/adjustments"
  return wrk.format("POST", path, nil, '{"delta":' .. (math.random(0, 1) * 2 - 1) .. '}')
end
`;
}

/** 1 of a random pet per request, held as long as the API allows (load-spec.ts randomReservation). */
function reservationScript(petCount: number): string {
  return `${SEEDED}
request = function()
  local body = '{"items":[{"petId":' .. math.random(1, ${petCount}) .. ',"quantity":1}],"ttlSeconds":${RESERVATION_TTL_MAX}}'
  return wrk.format("POST", "${RESERVATIONS_PATH}", nil, body)
end
`;
}

const SCRIPTS: Record<LoadMethod, (petCount: number) => string> = { GET: () => '', PATCH: patchScript, POST: adjustmentScript, RESERVE: reservationScript };

/** Called around the measured run only (not the warm-up), e.g. to read the server's CPU time before and after it. */
export interface WindowHooks {
  start(): void;
  end(): void;
}

/**
 * Runs wrk for one full-speed load (wrk has no fixed rate; those go to the paced generator): a warm-up run,
 * then the measured one. wrk takes whole seconds.
 */
export async function runWrk(spec: LoadSpec, threads: number, core: Core | undefined, window?: WindowHooks): Promise<LoadResult> {
  if (spec.rate !== undefined) throw new Error('wrk cannot hold a fixed rate; use autocannon for that load');
  const { warmupSeconds, durationSeconds } = wrkTiming(spec);
  if (warmupSeconds > 0) await wrkOnce(spec, warmupSeconds, threads, core);
  window?.start();
  const result = await wrkOnce(spec, durationSeconds, threads, core);
  window?.end();
  return result;
}

/** What wrk really runs: whole seconds, at least one. */
export function wrkTiming(spec: Pick<LoadSpec, 'warmupSeconds' | 'durationSeconds'>): { warmupSeconds: number; durationSeconds: number } {
  const whole = (s: number) => (s > 0 ? Math.max(1, Math.round(s)) : 0);
  return { warmupSeconds: whole(spec.warmupSeconds), durationSeconds: whole(spec.durationSeconds) };
}

async function wrkOnce(spec: LoadSpec, seconds: number, threads: number, core: Core | undefined): Promise<LoadResult> {
  const dir = await mkdtemp(join(tmpdir(), 'inventory-bench-wrk-'));
  try {
    const script = join(dir, 'load.lua');
    const auth = `wrk.headers["Authorization"] = ${JSON.stringify(spec.authorization)}\n`;
    await writeFile(script, auth + SCRIPTS[spec.method](spec.petCount) + DONE);
    const wrk = spawnChild(
      ['wrk', `-t${Math.min(threads, spec.connections)}`, `-c${spec.connections}`, `-d${seconds}s`, '--timeout', '30s', '-s', script, spec.baseUrl + GET_PATH],
      core ? { core } : {},
    );
    const how = await wrk.exited;
    const line = /^WRK_RESULT (\d+) (\d+) (\d+) (\d+) (\d+) (\d+)$/m.exec(wrk.output());
    if (how !== '0' || !line) throw new Error(`wrk failed (${how}):\n${wrk.output()}`);
    const [requests, durationUs, p50Us, p99Us, errors, non2xx] = line.slice(1).map(Number) as [number, number, number, number, number, number];
    const ok = requests - non2xx;
    return { requestsPerSecond: ok / (durationUs / 1e6), p50Ms: p50Us / 1000, p99Ms: p99Us / 1000, ok, failed: non2xx + errors };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
