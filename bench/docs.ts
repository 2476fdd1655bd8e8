import { existsSync } from 'node:fs';
import { get } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Browser, BrowserContext } from 'playwright-core';
import { CHROMIUM, startChromium } from '../test/support/browser.js';
import { listInventory } from '../src/operations/list-inventory.js';
import { createDatabase } from './databases.js';
import { describeLoadAverage } from './machine.js';
import type { BenchOptions } from './options.js';
import type { Row, Section } from './report.js';
import { seedDatabase } from './seed.js';
import { startServer } from './servers.js';

const TITLE = 'API reference at /docs (headless Chromium)';
/** Past this, a load counts as not measured: a note, never a failure. */
const LOAD_WAIT_MS = 60_000;
/** The page must show its first operation within this, on a two-core machine. */
const FIRST_OPERATION_TARGET_MS = 1500;
/** The first operation of the document, whose heading the reader waits for. */
const FIRST_OPERATION = listInventory.summary;

/** What the page recorded, in ms from the start of the navigation (performance.now()). */
interface LoadTimes {
  /** The first frame in which the first operation's heading (an h3 holding its summary) has a box and is not hidden. */
  firstOperation: number;
  /** The first frame with Scalar's "Test Request" button: the interactive reference has taken over. */
  interactive: number;
}

/**
 * Watches every frame from the start of the document (a string, so it runs before the page's own
 * scripts and needs nothing of tsx): a frame's requestAnimationFrame runs just before it paints,
 * so its time is when the reader first sees what it checks. A busy main thread delays both.
 */
const WATCH_FRAMES = `(() => {
  const summary = ${JSON.stringify(FIRST_OPERATION)};
  const shown = (el) => { const box = el.getBoundingClientRect(); return box.width > 0 && box.height > 0 && getComputedStyle(el).visibility !== 'hidden'; };
  const times = (window.__docsTimes = {});
  const frame = () => {
    const now = performance.now();
    if (times.firstOperation === undefined && [...document.querySelectorAll('h3')].some((h) => h.textContent.includes(summary) && shown(h))) times.firstOperation = now;
    if (times.interactive === undefined && [...document.querySelectorAll('button')].some((b) => /test request/i.test(b.textContent + ' ' + (b.getAttribute('aria-label') || '')) && shown(b))) times.interactive = now;
    if (times.firstOperation === undefined || times.interactive === undefined) requestAnimationFrame(frame);
  };
  requestAnimationFrame(frame);
})();`;

/**
 * The reference page as a newcomer meets it: the size of each script and style sheet the page
 * loads (as served: identity, gzip and br), then the built service driven by headless Chromium at
 * 1280×900: the time from navigation to the first operation's heading visible and to the
 * interactive reference, cold (a fresh browser context, so an empty cache, each load) and warm (the
 * next visits in one context: the HTTP cache and the compiled-code cache). Medians; the first
 * operation's against its target.
 */
export async function docsSection(options: BenchOptions): Promise<Section> {
  const databaseUrl = await createDatabase('sqlite', 'docs');
  const key = await seedDatabase(databaseUrl, 100);
  // Unpinned: Chromium starts processes of its own, which taskset could not keep off the server's core.
  const server = await startServer('service', { databaseUrl, key, pinned: false });
  try {
    return { title: TITLE, ...(await docsFigures(server.baseUrl, options.smoke ? 1 : options.quick ? 3 : 7)) };
  } finally {
    await server.stop();
  }
}

/** The sizes, then `loads` cold and `loads` warm loads of the page at `baseUrl`/docs (Chromium permitting). */
export async function docsFigures(baseUrl: string, loads: number): Promise<Pick<Section, 'rows' | 'notes'>> {
  const docs = `${baseUrl}/docs`;
  const rows = await assetRows(baseUrl, docs);
  if (!existsSync(CHROMIUM)) return { rows, notes: [`timings skipped: ${CHROMIUM} is missing (apt-get install -y chromium)`] };
  const browser = await startChromium();
  try {
    const cold: LoadTimes[] = [];
    for (let i = 0; i < loads; i++) {
      const times = await withContext(browser, (context) => timedLoad(context, docs));
      if (times) cold.push(times);
    }
    // Warm: the first visit fills the caches and is not counted.
    const warm: LoadTimes[] = [];
    await withContext(browser, async (context) => {
      for (let i = 0; i <= loads; i++) {
        const times = await timedLoad(context, docs);
        if (i > 0 && times) warm.push(times);
      }
    });
    rows.push(
      timing(`first operation visible, cold cache (${loads} loads, a fresh context each)`, cold.map((t) => t.firstOperation), loads, FIRST_OPERATION_TARGET_MS),
      timing(`first operation visible, warm cache (${loads} loads after one uncounted)`, warm.map((t) => t.firstOperation), loads, FIRST_OPERATION_TARGET_MS),
      timing('interactive ("Test Request" visible), cold cache', cold.map((t) => t.interactive), loads),
      timing('interactive ("Test Request" visible), warm cache', warm.map((t) => t.interactive), loads),
    );
    const note =
      `Chromium ${browser.version()} at 1280×900; the service unpinned; ${describeLoadAverage()} at the end; times from the start of the navigation to the first frame ` +
      `in which the heading "${FIRST_OPERATION}" (an h3) is visible, and in which Scalar's "Test Request" button is, read in the page; medians`;
    return { rows, notes: [note] };
  } finally {
    await browser.close();
  }
}

/** Loads the page in a new tab of `context` and resolves to what it recorded, or undefined when it never showed both. */
async function timedLoad(context: BrowserContext, url: string): Promise<LoadTimes | undefined> {
  const page = await context.newPage();
  try {
    await page.addInitScript(WATCH_FRAMES);
    await page.goto(url);
    // Polled by evaluate (the CDP's own evaluation): waitForFunction would eval a string, which the page's policy forbids.
    for (const deadline = Date.now() + LOAD_WAIT_MS; Date.now() < deadline; await sleep(100)) {
      const times = await page.evaluate<Partial<LoadTimes>>('window.__docsTimes');
      if (times.firstOperation !== undefined && times.interactive !== undefined) return times as LoadTimes;
    }
    return undefined;
  } catch {
    return undefined;
  } finally {
    await page.close();
  }
}

async function withContext<T>(browser: Browser, fn: (context: BrowserContext) => Promise<T>): Promise<T> {
  const context = await browser.newContext({ locale: 'en-US', viewport: { width: 1280, height: 900 } });
  try {
    return await fn(context);
  } finally {
    await context.close();
  }
}

/** The page and each file it loads, with its size in each coding the service sends it in. */
async function assetRows(baseUrl: string, docs: string): Promise<Row[]> {
  const html = (await download(docs, 'identity')).toString();
  // Scripts and style sheets by their tags, and a script the page loads later by its data-scalar attribute.
  const files = [...html.matchAll(/(?:<script src|<link rel="stylesheet" href|\sdata-scalar)="([^"]+)"/g)].map((m) => m[1]!);
  const rows: Row[] = [];
  for (const path of ['/docs', ...files]) {
    const url = new URL(path, baseUrl).href;
    const sizes = await Promise.all(CODINGS.map(async (coding) => `${coding} ${kilobytes((await download(url, coding)).length)}`));
    rows.push({ scenario: 'docs page and files', server: path.replace(/-[0-9a-f]{16}\./, '-HASH.'), checks: [{ text: sizes.join(', ') }] });
  }
  return rows;
}

const CODINGS = ['identity', 'gzip', 'br'] as const;

/** The bytes as sent, in the coding asked for (fetch would decode them). */
function download(url: string, coding: (typeof CODINGS)[number]): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    get(url, { headers: { 'accept-encoding': coding } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => (res.statusCode === 200 ? resolve(Buffer.concat(chunks)) : reject(new Error(`GET ${url}: ${res.statusCode}`))));
      res.on('error', reject);
    }).on('error', reject);
  });
}

/** The median of the samples and each sample, against `targetMs` when given, or "not measured" when no load recorded one. */
function timing(label: string, values: number[], loads: number, targetMs?: number): Row {
  const target = targetMs === undefined ? {} : { target: `≤ ${targetMs} ms` };
  if (values.length === 0) return { scenario: 'docs', server: label, checks: [{ text: 'not measured', ...target, ...(targetMs === undefined ? {} : { met: false }) }] };
  const sorted = [...values].sort((a, b) => a - b);
  const median = sorted[sorted.length >> 1]!;
  const missed = loads - values.length;
  const text = `median ${median.toFixed(0)} ms (${sorted.map((v) => v.toFixed(0)).join(', ')} ms)${missed > 0 ? `; ${missed} not within ${LOAD_WAIT_MS / 1000} s` : ''}`;
  return { scenario: 'docs', server: label, checks: [{ text, ...target, ...(targetMs === undefined ? {} : { met: median <= targetMs }) }] };
}

function kilobytes(bytes: number): string {
  return `${(bytes / 1000).toFixed(1)} kB`;
}
