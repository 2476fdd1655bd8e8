import { performance } from 'node:perf_hooks';
import { inspect } from 'node:util';
import autocannon from 'autocannon';
import { GET_PATH, HTTP_METHOD, loadRequest, percentile, type LoadResult, type LoadSpec } from './load-spec.js';

/**
 * One continuous run of warm-up plus window; only answers that arrive inside the window count.
 * (A separate warm-up run would leave its in-flight requests for the server to finish inside the window.)
 */
export async function runAutocannon(spec: LoadSpec): Promise<LoadResult> {
  const latencies: number[] = [];
  let ok = 0;
  let failed = 0;
  let windowStart = Infinity;
  let instance!: autocannon.Instance;
  const finished = new Promise<void>((done, fail) => {
    instance = autocannon(options(spec), (err: unknown) => (err ? fail(err instanceof Error ? err : new Error(inspect(err))) : done()));
  });
  instance.once('start', () => (windowStart = performance.now() + spec.warmupSeconds * 1000));
  instance.on('response', (_client, statusCode, _bytes, responseTime) => {
    if (performance.now() < windowStart) return;
    if (statusCode >= 200 && statusCode < 300) {
      ok++;
      latencies.push(responseTime);
    } else failed++;
  });
  instance.on('reqError', () => {
    if (performance.now() >= windowStart) failed++;
  });
  await finished;
  const windowSeconds = (performance.now() - windowStart) / 1000;
  const sorted = Float64Array.from(latencies).sort();
  return {
    requestsPerSecond: windowSeconds > 0 ? ok / windowSeconds : 0,
    p50Ms: percentile(sorted, 50),
    p99Ms: percentile(sorted, 99),
    ok,
    failed,
  };
}

function options(spec: LoadSpec): autocannon.Options {
  const headers: Record<string, string> = { authorization: spec.authorization };
  if (spec.method !== 'GET') headers['content-type'] = 'application/json';
  return {
    url: spec.baseUrl + GET_PATH,
    method: HTTP_METHOD[spec.method],
    headers,
    connections: spec.connections,
    duration: spec.warmupSeconds + spec.durationSeconds,
    // A 100,000-entry list under load can take seconds; a timeout would count as an error, not a slow answer.
    timeout: 30,
    // autocannon stops on a sample tick: 1 s ticks would round every run up to a whole second.
    sampleInt: 100,
    ...(spec.method === 'GET' ? {} : { requests: [{ setupRequest: (request) => ({ ...request, ...loadRequest(spec) }) }] }),
  };
}
