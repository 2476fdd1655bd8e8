import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { OPERATION_LABELS, ServiceMetrics } from '../../src/metrics/service-metrics.js';
import { documentPaths, headingAnchors, headingSlug, ROOT } from './markdown.js';

/** A heading the table of contents itself sits under, which it does not list. */
const CONTENTS_HEADING = 'Contents';

/** The `##` headings of a Markdown text, outside code blocks, in order. */
function sectionHeadings(text: string): string[] {
  const headings: string[] = [];
  let inFence = false;
  for (const line of text.split('\n')) {
    if (/^ *```/.test(line)) inFence = !inFence;
    const heading = !inFence && /^##\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading && heading[1] !== CONTENTS_HEADING) headings.push(heading[1]!);
  }
  return headings;
}

/** The table of contents of a document: its first run of `- [text](#anchor)` lines, or undefined when it has none. */
function tableOfContents(text: string): { text: string; anchor: string }[] | undefined {
  const lines = text.split('\n');
  const entry = /^- \[(.*)\]\(#([^)]*)\)\s*$/;
  const start = lines.findIndex((line) => entry.test(line));
  if (start < 0) return undefined;
  const entries: { text: string; anchor: string }[] = [];
  for (let i = start; i < lines.length; i++) {
    const match = entry.exec(lines[i]!);
    if (!match) break;
    entries.push({ text: match[1]!, anchor: match[2]! });
  }
  return entries;
}

test('every document with a table of contents lists each of its ## headings, in order, with the anchor of each', () => {
  let checked = 0;
  for (const file of documentPaths()) {
    const text = readFileSync(join(ROOT, file), 'utf8');
    const contents = tableOfContents(text);
    if (!contents) continue;
    checked++;
    const anchors = headingAnchors(text);
    for (const { anchor } of contents) assert.ok(anchors.has(anchor), `${file}: the table of contents points to #${anchor}, which no heading makes`);
    assert.deepEqual(
      contents,
      sectionHeadings(text).map((heading) => ({ text: heading, anchor: headingSlug(heading) })),
      `${file}: the table of contents and the ## headings`,
    );
  }
  // The README, the developers' guide and most pages of docs/ have one: finding none means the reader above is broken.
  assert.ok(checked >= 5, `tables of contents found in ${checked} documents`);
});

/** The rows of the metrics table in docs/operating.md: each row's metric names (backticked in its first cell) and the whole row. */
function metricsTable(): { names: string[]; row: string }[] {
  const text = readFileSync(join(ROOT, 'docs/operating.md'), 'utf8');
  const section = /^## Metrics\n([\s\S]*?)(?=^## )/m.exec(text)?.[1];
  assert.ok(section, 'docs/operating.md has the section "Metrics"');
  const rows = section
    .split('\n')
    .filter((line) => line.startsWith('|'))
    .slice(2);
  assert.ok(rows.length > 0, 'the section has a table of metrics');
  return rows.map((row) => ({ names: [...(row.split('|')[1] ?? '').matchAll(/`([^`]+)`/g)].map((match) => match[1]!), row }));
}

/** Whether a name of the table (a metric's name, or a family such as `process_*`) covers a registered metric. */
const covers = (documented: string, name: string) => (documented.endsWith('*') ? name.startsWith(documented.slice(0, -1)) : documented === name);

/** Every metric the service registers, read from its registry. */
function registeredMetrics(): string[] {
  const metrics = new ServiceMetrics();
  try {
    return metrics.registry.getMetricsAsArray().map((metric) => metric.name);
  } finally {
    metrics.close();
  }
}

test("docs/operating.md's metrics table lists every metric the service registers, and none it does not", () => {
  const registered = registeredMetrics();
  const documented = metricsTable().flatMap((row) => row.names);
  assert.ok(registered.length > 0);
  assert.deepEqual(
    registered.filter((name) => !documented.some((entry) => covers(entry, name))),
    [],
    'registered metrics missing from the table',
  );
  assert.deepEqual(
    documented.filter((entry) => !registered.some((name) => covers(entry, name))),
    [],
    'metrics in the table that the service does not register',
  );
});

test("the metrics table's row of requests names every operation label a request can carry", () => {
  const row = metricsTable().find((r) => r.names.includes('inventory_http_requests_total'));
  assert.ok(row, 'the table has inventory_http_requests_total');
  assert.deepEqual(
    OPERATION_LABELS.filter((label) => !row.row.includes(`\`${label}\``)),
    [],
    'operation labels the row leaves out',
  );
});
