import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import type { Browser, Page } from 'playwright-core';
import { CHROMIUM, startChromium } from '../test/support/browser.js';
import { columnHeader, eventually, firstRows, measured, measures, searchField, signIn, SORT_COLUMNS, sortButton, statusFilter, type MeasureName } from '../dashboard/test/dashboard-page.js';
import { createDatabase } from './databases.js';
import type { BenchOptions } from './options.js';
import { REPO_ROOT } from './processes.js';
import type { Row, Section } from './report.js';
import { seedDatabase } from './seed.js';
import { startServer } from './servers.js';

/** The catalogue the dashboard is timed on: a large store's, whatever the mode (seeding it takes about a second). */
export const DASHBOARD_ENTRIES = 100_000;
const ASSETS = join(REPO_ROOT, 'dist', 'dashboard', 'assets');
const TITLE = `Dashboard (SQLite, ${DASHBOARD_ENTRIES.toLocaleString('en-US')} entries, headless Chromium)`;
/** Past this, a change the page should have measured counts as not measured: a note, never a failure. */
const MEASURE_WAIT_MS = 30_000;
const FILTERS = ['available', 'pending', 'sold', 'All statuses'] as const;
const SEARCHES = ['99', '12345', ''] as const;

/**
 * The staff dashboard as its users meet it: the size of what the browser downloads (raw, and
 * compressed as gzip -9 and brotli 11, from dist/dashboard/assets), then the built service on
 * SQLite with DASHBOARD_ENTRIES entries, driven by headless Chromium: the time to the first rows
 * after "Sign in", each sort, each filter and search, read from the performance measures the app
 * records (dashboard:first-rows, dashboard:sort, dashboard:filter). Medians; nothing has a target.
 */
export async function dashboardSection(options: BenchOptions): Promise<Section> {
  const rows: Row[] = [];
  const notes: string[] = [];
  if (!existsSync(ASSETS)) return { title: TITLE, rows, notes: ['skipped: dist/dashboard/assets is missing (npm run build makes it)'] };
  rows.push(...(await assetRows()));
  if (!existsSync(CHROMIUM)) return { title: TITLE, rows, notes: [`timings skipped: ${CHROMIUM} is missing (apt-get install -y chromium)`] };

  const signIns = options.smoke ? 1 : options.quick ? 3 : 7;
  const rounds = options.quick ? 1 : 5;
  const databaseUrl = await createDatabase('sqlite', 'dashboard');
  const key = await seedDatabase(databaseUrl, DASHBOARD_ENTRIES);
  // Unpinned: Chromium starts processes of its own, which taskset could not keep off the server's core.
  const server = await startServer('service', { databaseUrl, key, pinned: false });
  const browser = await startChromium();
  try {
    const dashboard = `${server.baseUrl}/dashboard`;
    const firstRowTimes: number[] = [];
    for (let i = 0; i < signIns; i++) {
      const ms = await withPage(browser, (page) => signedIn(page, dashboard, key));
      if (ms !== undefined) firstRowTimes.push(ms);
    }
    rows.push(timing(`first rows after Sign in (${signIns} sign-ins, a fresh browser context each)`, firstRowTimes));

    const samples = new Map<string, number[]>();
    const missing = new Set<string>();
    const record = (label: string, ms: number | undefined) => {
      if (ms === undefined) missing.add(label);
      else samples.set(label, [...(samples.get(label) ?? []), ms]);
    };
    const timed = (page: Page, name: MeasureName, action: () => Promise<void>) => measured(page, name, action, MEASURE_WAIT_MS).catch(() => undefined);
    await withPage(browser, async (page) => {
      await signedIn(page, dashboard, key);
      for (let round = 0; round < rounds; round++) {
        for (const column of SORT_COLUMNS) {
          for (let click = 0; click < 2; click++) {
            const ms = await timed(page, 'dashboard:sort', () => sortButton(page, column).click());
            // Labelled by the direction the header announces after the click.
            record(`sort ${column}, ${(await columnHeader(page, column).getAttribute('aria-sort')) ?? 'no aria-sort'}`, ms);
          }
        }
        for (const status of FILTERS) record(`filter: ${status}`, await timed(page, 'dashboard:filter', () => statusFilter(page).selectOption({ label: status }).then(() => undefined)));
        for (const text of SEARCHES) record(text === '' ? 'search cleared' : `search "${text}"`, await timed(page, 'dashboard:filter', () => searchField(page).fill(text)));
      }
    });
    for (const [label, values] of samples) rows.push(timing(label, values));
    if (missing.size > 0) notes.push(`no measure recorded within ${MEASURE_WAIT_MS / 1000} s for: ${[...missing].join(', ')}`);
    notes.push(
      `Chromium ${browser.version()} at 1280×800; the service unpinned; times are the app's own performance measures ` +
        '(dashboard:first-rows from the Sign in click, dashboard:sort and dashboard:filter from the change to the re-rendered rows), medians',
    );
  } finally {
    await browser.close();
    await server.stop();
  }
  return { title: TITLE, rows, notes };
}

/** Raw, gzip and brotli sizes of the JavaScript and the CSS the page loads, each kind summed over its files. */
async function assetRows(): Promise<Row[]> {
  const files = (await readdir(ASSETS)).sort();
  const rows: Row[] = [];
  for (const kind of ['js', 'css'] as const) {
    const mine = files.filter((f) => f.endsWith(`.${kind}`));
    const sizes = { raw: 0, gzip: 0, brotli: 0 };
    for (const file of mine) {
      const body = await readFile(join(ASSETS, file));
      sizes.raw += body.length;
      sizes.gzip += gzipSync(body, { level: 9 }).length;
      sizes.brotli += brotliCompressSync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: body.length } }).length;
    }
    rows.push({
      scenario: `dashboard ${kind === 'js' ? 'JavaScript' : 'CSS'}`,
      server: `${mine.length} file${mine.length === 1 ? '' : 's'}: ${mine.join(', ') || 'none'}`,
      checks: [{ text: `raw ${kilobytes(sizes.raw)}` }, { text: `gzip ${kilobytes(sizes.gzip)}` }, { text: `brotli ${kilobytes(sizes.brotli)}` }],
    });
  }
  return rows;
}

/** Signs in on a fresh page and resolves to the first-rows measure, or undefined when the page recorded none. */
async function signedIn(page: Page, dashboard: string, key: string): Promise<number | undefined> {
  await page.goto(dashboard);
  await signIn(page, key);
  await firstRows(page, 120_000);
  return eventually(async () => {
    const [ms] = await measures(page, 'dashboard:first-rows');
    if (ms === undefined) throw new Error('no dashboard:first-rows measure');
    return ms;
  }, MEASURE_WAIT_MS).catch(() => undefined);
}

async function withPage<T>(browser: Browser, fn: (page: Page) => Promise<T>): Promise<T> {
  const context = await browser.newContext({ locale: 'en-US', viewport: { width: 1280, height: 800 } });
  try {
    const page = await context.newPage();
    page.setDefaultTimeout(60_000);
    return await fn(page);
  } finally {
    await context.close();
  }
}

/** The median of the samples and each sample, or "not measured" when the page recorded none. */
function timing(label: string, values: number[]): Row {
  if (values.length === 0) return { scenario: 'dashboard', server: label, checks: [{ text: 'not measured' }] };
  const sorted = [...values].sort((a, b) => a - b);
  const median = sorted[sorted.length >> 1]!;
  const text = sorted.length === 1 ? `${median.toFixed(0)} ms (1 run)` : `median ${median.toFixed(0)} ms (${sorted.length} runs: ${sorted.map((v) => v.toFixed(0)).join(', ')} ms)`;
  return { scenario: 'dashboard', server: label, checks: [{ text }] };
}

function kilobytes(bytes: number): string {
  return `${(bytes / 1000).toFixed(1)} kB`;
}
