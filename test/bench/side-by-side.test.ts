import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { LoadGenerator } from '../../bench/load.js';
import type { LoadResult, LoadSpec } from '../../bench/load-spec.js';
import type { WindowHooks } from '../../bench/load-wrk.js';
import { parseOptions } from '../../bench/options.js';
import { alternateRounds, bestCounted, bestCpuUs, bestMainCpuUs, bestRun, cpu, cpuWindow, eachCounted, eachCpu, eachRun, roundOrder, type Side } from '../../bench/side-by-side.js';
import type { RunningServer } from '../../bench/servers.js';

/** A server that is not there: only its base URL and pid are read. */
function server(name: string, pid: number | undefined): RunningServer {
  return { kind: 'service', baseUrl: `http://${name}`, pid, peakRssBytes: () => undefined, rssBytes: () => undefined, stop: async () => {} };
}

function result(requestsPerSecond: number, ok = 1000, failed = 0): LoadResult {
  return { requestsPerSecond, p50Ms: 1, p99Ms: 2, ok, failed };
}

/** A load generator that answers each load from `results` in turn, and records which server it loaded and whether it was asked for a window. */
function scripted(results: LoadResult[]) {
  const loaded: { baseUrl: string; windowed: boolean }[] = [];
  const load = {
    tool: 'wrk',
    run: async (spec: LoadSpec, _pinned?: boolean, window?: WindowHooks) => {
      loaded.push({ baseUrl: spec.baseUrl, windowed: window !== undefined });
      window?.start();
      window?.end();
      const next = results.shift();
      if (!next) throw new Error('more loads than scripted');
      return next;
    },
  } as unknown as LoadGenerator;
  return { load, loaded };
}

const full = parseOptions([])!;
const quick = parseOptions(['--quick'])!;
const side = (label: string, pid?: number): Side => ({ label, key: 'k', server: server(label, pid), runs: [] });

test('rounds alternate the order each round; the warm-up round is not counted; each side keeps its own counted rounds', async () => {
  const a = side('a');
  const b = side('b');
  // Warm-up (b, a), then rounds 1 (a, b), 2 (b, a), 3 (a, b).
  const { load, loaded } = scripted([result(1), result(2), result(10), result(20), result(21), result(11), result(12), result(22)]);
  const notes: string[] = [];
  await alternateRounds([a, b], 'PATCH', 'sqlite', full, load, notes);
  assert.deepEqual(
    loaded.map((l) => l.baseUrl),
    ['http://b', 'http://a', 'http://a', 'http://b', 'http://b', 'http://a', 'http://a', 'http://b'],
  );
  assert.deepEqual(a.runs.map((r) => r.requestsPerSecond), [10, 11, 12]);
  assert.deepEqual(b.runs.map((r) => r.requestsPerSecond), [20, 21, 22]);
  assert.deepEqual(notes, []);
  assert.equal(a.cpuUs, undefined, 'no CPU read unless the shape asks for it');
  assert.ok(loaded.every((l) => !l.windowed));
});

test('a quick run counts one round after the warm-up', async () => {
  const a = side('a');
  const { load, loaded } = scripted([result(1), result(5)]);
  await alternateRounds([a], 'GET', 'postgres', quick, load, []);
  assert.equal(loaded.length, 2);
  assert.deepEqual(a.runs.map((r) => r.requestsPerSecond), [5]);
});

test('a counted round with failures is noted; a round with no 2xx at all stops the comparison', async () => {
  const a = side('a');
  const notes: string[] = [];
  await alternateRounds([a], 'PATCH', 'sqlite', quick, scripted([result(1), result(5, 900, 7)]).load, notes);
  assert.deepEqual(notes, ['PATCH, a, round 1: 7 non-2xx answers or socket errors, left out of req/s']);
  await assert.rejects(alternateRounds([side('b')], 'PATCH', 'sqlite', quick, scripted([result(0, 0, 50)]).load, []), /b answered no 2xx during "PATCH" \(50 failures\)/);
});

test('with cpu, the server\'s CPU is read around each measured window: per round, per 2xx answer; unknown without a pid', async () => {
  const withPid = side('self', process.pid);
  const withoutPid = side('gone');
  const { load, loaded } = scripted([result(1), result(1), result(100, 1), result(100, 1)]);
  await alternateRounds([withPid, withoutPid], 'PATCH', 'sqlite', quick, load, [], { method: 'PATCH', petCount: 10, connections: 4, cpu: true });
  assert.ok(loaded.every((l) => l.windowed));
  assert.equal(withPid.cpuUs?.length, 1);
  const [cpu] = withPid.cpuUs ?? [];
  assert.ok(cpu !== undefined && Number.isFinite(cpu) && cpu >= 0, String(cpu));
  const [main] = withPid.mainCpuUs ?? [];
  assert.ok(main !== undefined && Number.isFinite(main) && main >= 0, String(main));
  assert.deepEqual([withoutPid.cpuUs, withoutPid.mainCpuUs], [[undefined], [undefined]]);
  assert.equal(eachCpu(withoutPid), 'unknown');
});

test('a window outside the rounds: its CPU per answer once both ends are read; unknown before, without a pid or without answers', () => {
  const window = cpuWindow(process.pid);
  assert.deepEqual(window.perAnswerUs(10), { all: undefined, main: undefined });
  window.hooks.start();
  window.hooks.end();
  const { all, main } = window.perAnswerUs(10);
  assert.ok(all !== undefined && Number.isFinite(all) && all >= 0, String(all));
  assert.ok(main !== undefined && Number.isFinite(main) && main >= 0, String(main));
  assert.deepEqual(window.perAnswerUs(0), { all: undefined, main: undefined });
  const gone = cpuWindow(undefined);
  gone.hooks.start();
  gone.hooks.end();
  assert.deepEqual(gone.perAnswerUs(10), { all: undefined, main: undefined });
});

test('a side\'s counter is read at both ends of each counted window: what grew meanwhile, the warm-up left out', async () => {
  // Each reading adds to it: 103 at a window's end (what grew within the window), 3 at a window's start (what grew between windows).
  let count = 0;
  let reads = 0;
  const counted: Side = { ...side('service', process.pid), counter: () => (count += reads++ % 2 === 0 ? 3 : 103) };
  const plain = side('bare', process.pid);
  const { load } = scripted([result(1), result(1), result(10, 500), result(20), result(11, 400), result(21), result(12, 300), result(22)]);
  await alternateRounds([counted, plain], 'PATCH', 'sqlite', full, load, [], { method: 'PATCH', petCount: 10, connections: 4, cpu: true });
  // The warm-up's reading and three counted rounds: each window saw its end reading's growth alone.
  assert.equal(reads, 8);
  assert.deepEqual(counted.counted, [103, 103, 103]);
  assert.equal(plain.counted, undefined, 'no counter, nothing counted');
  assert.equal(eachCounted(counted), '103, 103, 103');
  assert.equal(eachCounted(plain), '');
  assert.equal(bestCounted(plain), undefined);
});

test('a round whose load ran no window counts nothing for it: unknown, not zero', async () => {
  let reads = 0;
  const counted: Side = { ...side('service', process.pid), counter: () => ++reads };
  // A load generator that never calls the window's hooks (one that cannot tell its warm-up from its measured run).
  const results = [result(1), result(5)];
  const load = { tool: 'autocannon', run: async () => results.shift()! } as unknown as LoadGenerator;
  await alternateRounds([counted], 'PATCH', 'sqlite', quick, load, [], { method: 'PATCH', petCount: 10, connections: 4, cpu: true });
  assert.equal(reads, 0);
  assert.deepEqual(counted.counted, [undefined]);
  assert.equal(eachCounted(counted), 'unknown');
});

test('without a CPU window nothing is counted', async () => {
  let reads = 0;
  const counted: Side = { ...side('service'), counter: () => ++reads };
  await alternateRounds([counted], 'PATCH', 'sqlite', quick, scripted([result(1), result(5)]).load, []);
  assert.equal(reads, 0);
  assert.equal(counted.counted, undefined);
});

test('the best round is the fastest, and its CPU is the one reported beside it', () => {
  const s: Side = { ...side('s'), runs: [result(9_000), result(12_345.6), result(11_000)], cpuUs: [70, 55, 60], mainCpuUs: [50, 40, 45] };
  assert.equal(bestRun(s).requestsPerSecond, 12_345.6);
  assert.equal(bestCpuUs(s), 55);
  assert.equal(bestMainCpuUs(s), 40);
  assert.equal(bestCounted({ ...s, counted: [700, 1_234, 900] }), 1_234);
  assert.equal(eachRun(s), '9,000, 12,346, 11,000');
  assert.equal(eachCpu(s), '70 (main thread 50), 55 (main thread 40), 60 (main thread 45)');
  assert.equal(eachCpu({ ...s, mainCpuUs: undefined }), '70, 55, 60');
  assert.deepEqual(cpu(s), { text: '55 µs CPU/request (main thread 40, others 15)' });
  assert.deepEqual(cpu({ ...s, mainCpuUs: undefined }), { text: '55 µs CPU/request' });
  assert.deepEqual(cpu({ ...s, cpuUs: [undefined, undefined, undefined] }), { text: 'CPU/request unknown (no /proc)' });
});

test('roundOrder: as given in odd rounds, reversed in even ones (the warm-up is round 0)', () => {
  assert.deepEqual(roundOrder(['a', 'b', 'c'], 0), ['c', 'b', 'a']);
  assert.deepEqual(roundOrder(['a', 'b', 'c'], 1), ['a', 'b', 'c']);
  assert.deepEqual(roundOrder(['a', 'b', 'c'], 2), ['c', 'b', 'a']);
});
