import { Agent, request } from 'node:http';
import { performance } from 'node:perf_hooks';
import { HTTP_METHOD, loadRequest, percentile, type LoadResult, type LoadSpec } from './load-spec.js';

/** How often the pacer checks which requests are due; each check sends all that are. */
const TICK_MS = 5;

/**
 * Open-loop load at spec.rate requests per second, spaced evenly, whatever the server's latency
 * (up to spec.connections in flight; a request due while all are busy waits for one). `stop` ends
 * the window early, for a load that lasts as long as something else does.
 */
export async function runPaced(spec: LoadSpec, stop?: AbortSignal): Promise<LoadResult> {
  const rate = spec.rate;
  if (rate === undefined || rate <= 0) throw new Error('a paced load needs a positive rate');
  const agent = new Agent({ keepAlive: true, maxSockets: spec.connections });
  const url = new URL(spec.baseUrl);
  const latencies: number[] = [];
  let ok = 0;
  let failed = 0;
  const failures: Record<string, number> = {};
  const fail = (reason: string) => {
    failed++;
    failures[reason] = (failures[reason] ?? 0) + 1;
  };
  let sent = 0;
  const start = performance.now();
  const windowStart = start + spec.warmupSeconds * 1000;
  let end = windowStart + spec.durationSeconds * 1000;
  const inFlight = new Set<Promise<void>>();

  const send = () => {
    const { path, body } = loadRequest(spec);
    const headers: Record<string, string | number> = { authorization: spec.authorization };
    if (body !== undefined) Object.assign(headers, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    const sentAt = performance.now();
    const done = new Promise<void>((settle) => {
      const req = request({ host: url.hostname, port: url.port, path, method: HTTP_METHOD[spec.method], headers, agent }, (res) => {
        const status = res.statusCode ?? 0;
        const answered = status >= 200 && status < 300;
        // A failure's body is the service's Error object: its code says why (a 2xx body is not kept).
        const chunks: Buffer[] = [];
        if (answered) res.resume();
        else res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.once('end', () => {
          const at = performance.now();
          if (sentAt >= windowStart) {
            if (answered) {
              ok++;
              latencies.push(at - sentAt);
            } else fail(`${status} ${errorCode(Buffer.concat(chunks).toString())}`.trim());
          }
          settle();
        });
      });
      req.setTimeout(30_000, () => req.destroy(new Error('timed out')));
      req.once('error', (error) => {
        if (sentAt >= windowStart) fail(error.message);
        settle();
      });
      req.end(body);
    });
    inFlight.add(done);
    void done.then(() => inFlight.delete(done));
  };

  await new Promise<void>((finish) => {
    const timer = setInterval(() => {
      const now = performance.now();
      if (stop?.aborted) end = Math.min(end, now);
      if (now >= end) {
        clearInterval(timer);
        finish();
        return;
      }
      const due = Math.floor(((now - start) / 1000) * rate);
      for (; sent < due; sent++) send();
    }, TICK_MS);
  });
  await Promise.all(inFlight);
  agent.destroy();
  const sorted = Float64Array.from(latencies).sort();
  // Requests are counted by send time, and sending stops at the window's end: the rate is over the window.
  const windowSeconds = (end - windowStart) / 1000;
  return { requestsPerSecond: windowSeconds > 0 ? ok / windowSeconds : 0, p50Ms: percentile(sorted, 50), p99Ms: percentile(sorted, 99), ok, failed, failures };
}

/** The Error object's code, or nothing when the body is not one. */
function errorCode(body: string): string {
  try {
    const parsed: unknown = JSON.parse(body);
    if (typeof parsed === 'object' && parsed !== null && 'code' in parsed && typeof parsed.code === 'string') return parsed.code;
  } catch {
    // not JSON: the status alone says it
  }
  return '';
}
