import type { LoadResult } from './load-spec.js';

/** One comparison on a row: a ratio or a value, with the issue's target when it sets one. */
export interface Check {
  text: string;
  target?: string;
  met?: boolean;
}

/** One line of the table: a measured load, or a value such as peak RSS (result absent). */
export interface Row {
  scenario: string;
  server: string;
  result?: LoadResult;
  checks: Check[];
}

/** One backend's table and what the reader should know about it (errors seen, skips). */
export interface Section {
  title: string;
  /** The command that measures this section again, alone: every ratio in it is measured side by side in that run too. */
  command?: string;
  rows: Row[];
  notes: string[];
  /** What went wrong in what was measured (a sale lost): printed loudly under the section, and the run exits non-zero. */
  failures?: string[];
}

/** `value`× `of`, met when at least `atLeast` (no target when absent); NaN or infinite when a side had no answers. */
export function ratio(value: number, of: string, atLeast?: number): Check {
  if (!Number.isFinite(value)) return { text: `n/a × ${of} (no answers)`, ...(atLeast === undefined ? {} : { target: `≥ ${atLeast}`, met: false }) };
  const text = `${value.toFixed(2)}× ${of}`;
  return atLeast === undefined ? { text } : { text, target: `≥ ${atLeast}`, met: value >= atLeast };
}

/** Peak RSS against a ceiling in MiB. */
export function peakRss(bytes: number | undefined, belowMiB: number): Check {
  if (bytes === undefined) return { text: 'peak RSS unknown (no /proc)', target: `< ${belowMiB} MB` };
  const mib = bytes / 1048576;
  return { text: `peak RSS ${mib.toFixed(0)} MB`, target: `< ${belowMiB} MB`, met: mib < belowMiB };
}

const HEADER = ['scenario', 'server', 'req/s', 'p50 ms', 'p99 ms', 'ratio / value', 'target', 'met?'];

/** The section as a padded markdown table: readable in a terminal and rendered in bench/results.md. */
export function renderTable(section: Section): string {
  const lines: string[][] = [];
  for (const row of section.rows) {
    const [first, ...more] = row.checks.length > 0 ? row.checks : [undefined];
    const r = row.result;
    lines.push([
      row.scenario,
      row.server,
      r ? thousands(r.requestsPerSecond) : '—',
      r ? ms(r.p50Ms) : '—',
      r ? ms(r.p99Ms) : '—',
      ...checkCells(first),
    ]);
    for (const check of more) lines.push(['', '', '', '', '', ...checkCells(check)]);
  }
  const widths = HEADER.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const format = (cells: string[]) => `| ${cells.map((c, i) => (i >= 2 && i <= 4 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join(' | ')} |`;
  const rule = `|${widths.map((w, i) => (i >= 2 && i <= 4 ? `${'-'.repeat(w + 1)}:` : '-'.repeat(w + 2))).join('|')}|`;
  return [format(HEADER), rule, ...lines.map(format)].join('\n');
}

function checkCells(check: Check | undefined): [string, string, string] {
  if (!check) return ['—', '—', '—'];
  const met = check.met === undefined ? '—' : check.met ? 'met' : 'not met';
  return [check.text, check.target ?? '—', met];
}

function thousands(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

/** Two decimals below 10 ms, one from there: judged on the value as it rounds, so 9.999 is "10.0", not "10.00". */
function ms(n: number): string {
  return Number(n.toFixed(2)) < 10 ? n.toFixed(2) : n.toFixed(1);
}

/** "- note" lines under a table; nothing when there are none. */
export function renderNotes(notes: readonly string[]): string {
  return notes.map((n) => `- ${n}`).join('\n');
}
