import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import autocannon from 'autocannon';
import { BACKENDS, backendSkip } from '../support/backends.js';
import { byScale } from '../support/scale.js';
import { pets, startService } from '../support/service.js';

/**
 * Mixed GET/PATCH load near capacity for a while (three list GETs per PATCH, on keep-alive
 * connections): not one error or non-2xx answer, and no clear memory growth (RSS a third into
 * the load and at its end, with the server's heap capped). p99 latency is reported, never asserted (the machine is shared).
 */

const SECONDS = byScale(10, 60);
const CONNECTIONS = 16;
const PETS = 100;
/** RSS may grow this much from the end of the first third of the run to its end: caches settle early, a leak keeps going. */
const RSS_GROWTH_BOUND_BYTES = 96 * 1024 * 1024;
/**
 * The server's V8 old space, capped: V8 grows a heap lazily (on Node 24 by 100 MB in ten seconds
 * of this load, then it settles), which RSS alone cannot tell from a leak; with a cap, a leak in
 * the heap makes the server fail within the run instead, which the assertions below catch.
 */
const SERVER_OLD_SPACE_MB = 128;

for (const backend of BACKENDS) {
  describe(`soak on ${backend}`, { skip: await backendSkip(backend) }, () => {
    test(`${SECONDS} s of mixed GET/PATCH load: 0 errors, flat memory`, { timeout: (SECONDS + 90) * 1000 }, async (t) => {
      // Limits meant for clients of a shared service would refuse a load test's one key; load shedding (503 once the
      // process stalls for a second, as it may on a machine loaded with other tests) is another test's subject.
      const service = await startService(t, backend, { items: pets(PETS), quiet: true, env: { RATE_LIMIT_PER_MINUTE: '0', MAX_EVENT_LOOP_DELAY_MS: '0', NODE_OPTIONS: `--max-old-space-size=${SERVER_OLD_SPACE_MB}` } });
      const { baseUrl, proc } = service.server;
      const headers = { authorization: `Bearer ${service.keys.write}` };
      const get = { method: 'GET' as const, path: '/v1/inventory', headers };
      let n = 0;
      const patch = {
        method: 'PATCH' as const,
        path: '/v1/inventory/1',
        headers: { ...headers, 'content-type': 'application/json' },
        setupRequest: (req: autocannon.Request) => {
          n++;
          return { ...req, path: `/v1/inventory/${(n % PETS) + 1}`, body: JSON.stringify({ quantity: n % 1000 }) };
        },
      };
      // Warm up (JIT, key cache, list cache), then measure RSS where the load begins.
      await autocannon({ url: baseUrl, connections: CONNECTIONS, duration: 2, requests: [get, get, get, patch] });
      const rssStart = rssOf(proc.pid!);
      // Samples along the way tell settling (a plateau) from a leak (a steady climb).
      const samples: number[] = [];
      const sampler = setInterval(() => samples.push(rssOf(proc.pid!)), (SECONDS * 1000) / 6);
      const result = await autocannon({ url: baseUrl, connections: CONNECTIONS, duration: SECONDS, requests: [get, get, get, patch] });
      clearInterval(sampler);
      const rssEnd = rssOf(proc.pid!);
      // Growth is judged from the end of the first third: the heap and the store's caches settle before that.
      const rssSettled = samples[1] ?? rssStart;

      const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;
      t.diagnostic(
        `${backend}: ${result.requests.total} requests in ${SECONDS} s (${Math.round(result.requests.average)}/s, ${CONNECTIONS} connections), ` +
          `latency p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms, max ${result.latency.max} ms; RSS start ${mb(rssStart)}, end ${mb(rssEnd)} (along the way: ${samples.map(mb).join(', ')})`,
      );
      assert.equal(result.errors, 0, 'connection errors');
      assert.equal(result.timeouts, 0, 'timeouts');
      assert.equal(result.non2xx, 0, 'non-2xx answers');
      assert.ok(result.requests.total > 0, 'requests were answered');
      assert.ok(rssEnd - rssSettled < RSS_GROWTH_BOUND_BYTES, `RSS grew from ${mb(rssSettled)} (a third in) to ${mb(rssEnd)}`);
      assert.equal(proc.exitCode, null, 'the server is still running');
      assert.doesNotMatch(service.server.stdout() + service.server.stderr(), /"level":50/, 'no error lines in the log');
    });
  });
}

/** The resident set size of a process (Linux /proc), in bytes. */
function rssOf(pid: number): number {
  const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  if (kb === undefined) throw new Error(`no VmRSS for ${pid}`);
  return Number(kb) * 1024;
}
