import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseOptions } from '../../bench/options.js';
import { peakRss, ratio, renderNotes, renderTable } from '../../bench/report.js';

test('ratio: two decimals against what it is of; met only at or above the target; a side without answers is n/a and not met', () => {
  assert.deepEqual(ratio(0.5649, 'bare'), { text: '0.56× bare' });
  assert.deepEqual(ratio(0.8, 'bare', 0.8), { text: '0.80× bare', target: '≥ 0.8', met: true });
  assert.deepEqual(ratio(0.7999, 'bare', 0.8), { text: '0.80× bare', target: '≥ 0.8', met: false });
  assert.deepEqual(ratio(Infinity, 'bare', 0.9), { text: 'n/a × bare (no answers)', target: '≥ 0.9', met: false });
  assert.deepEqual(ratio(NaN, 'bare'), { text: 'n/a × bare (no answers)' });
});

test('peakRss: in MB against its ceiling; unknown without /proc', () => {
  assert.deepEqual(peakRss(150 * 1048576, 200), { text: 'peak RSS 150 MB', target: '< 200 MB', met: true });
  assert.deepEqual(peakRss(200 * 1048576, 200), { text: 'peak RSS 200 MB', target: '< 200 MB', met: false });
  assert.deepEqual(peakRss(undefined, 200), { text: 'peak RSS unknown (no /proc)', target: '< 200 MB' });
});

test('renderTable: a markdown table, figures right-aligned, one line per check under its row, dashes where there is nothing', () => {
  const table = renderTable({
    title: 'durable',
    notes: [],
    rows: [
      { scenario: 'PATCH', server: 'bare', result: { requestsPerSecond: 27_455.4, p50Ms: 2.345, p99Ms: 12.34, ok: 1, failed: 0 }, checks: [] },
      {
        scenario: 'PATCH',
        server: 'service',
        result: { requestsPerSecond: 15_438, p50Ms: 4, p99Ms: 9.5, ok: 1, failed: 0 },
        checks: [ratio(0.56, 'bare', 0.8), { text: '63 µs CPU/request' }],
      },
      { scenario: 'memory', server: 'service', checks: [peakRss(100 * 1048576, 200)] },
    ],
  });
  assert.equal(
    table,
    [
      '| scenario | server  |  req/s | p50 ms | p99 ms | ratio / value     | target   | met?    |',
      '|----------|---------|-------:|-------:|-------:|-------------------|----------|---------|',
      '| PATCH    | bare    | 27,455 |   2.35 |   12.3 | —                 | —        | —       |',
      '| PATCH    | service | 15,438 |   4.00 |   9.50 | 0.56× bare        | ≥ 0.8    | not met |',
      '|          |         |        |        |        | 63 µs CPU/request | —        | —       |',
      '| memory   | service |      — |      — |      — | peak RSS 100 MB   | < 200 MB | met     |',
    ].join('\n'),
  );
});

test('renderTable: milliseconds with two decimals below 10 and one from 10 on, judged as they round', () => {
  const row = (p50Ms: number, p99Ms: number) => ({ scenario: 'GET', server: 'bare', result: { requestsPerSecond: 1, p50Ms, p99Ms, ok: 1, failed: 0 }, checks: [] });
  const cells = (p50Ms: number, p99Ms: number) => renderTable({ title: 't', notes: [], rows: [row(p50Ms, p99Ms)] }).split('\n')[2]!.split('|').slice(4, 6).map((c) => c.trim());
  assert.deepEqual(cells(9.994, 9.999), ['9.99', '10.0']);
  assert.deepEqual(cells(0.004, 99.96), ['0.00', '100.0']);
});

test('renderNotes: a list item per note, nothing for none', () => {
  assert.equal(renderNotes(['one', 'two']), '- one\n- two');
  assert.equal(renderNotes([]), '');
});

test('parseOptions: quick shortens the windows and sizes; a wrong backend, load or scenario is refused; --help is undefined', () => {
  const quick = parseOptions(['--quick', '--backends', 'postgres', '--only', 'durable'])!;
  assert.deepEqual([quick.quick, quick.durationSeconds, quick.sizes, quick.backends, quick.only], [true, 1, [100, 1_000, 10_000], ['postgres'], 'durable']);
  assert.deepEqual(parseOptions([])!.sizes, [100, 10_000, 100_000]);
  assert.equal(quick.smoke, false);
  // A smoke run is a quick run cut further: every quick reduction holds, and its own on top.
  const smoke = parseOptions(['--smoke'])!;
  assert.deepEqual(
    [smoke.smoke, smoke.quick, smoke.warmupSeconds, smoke.durationSeconds, smoke.sizes, smoke.startupRounds, smoke.catalogueSize],
    [true, true, 0, 0.25, [10, 100, 1_000], 1, 1_000],
  );
  assert.equal(parseOptions(['--help']), undefined);
  assert.throws(() => parseOptions(['--backends', 'mysql']), /--backends: unknown backend "mysql"; use sqlite, postgres/);
  assert.throws(() => parseOptions(['--load', 'ab']), /--load must be wrk or autocannon, got "ab"/);
  assert.throws(() => parseOptions(['--only', 'everything']), /--only takes catalogue or .* or webhooks, got "everything"/);
});
