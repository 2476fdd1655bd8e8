import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { after, test, type TestContext } from 'node:test';
import type { Browser, BrowserContext, Locator, Page, Request, Response } from 'playwright-core';
import { INT64_MAX, INT64_MIN } from '../../src/domain/pet-id.js';
import type { InventoryItem, PetStatus } from '../../src/schemas/inventory.js';
import { CHANGE_REASONS, PET_STATUSES } from '../../src/schemas/values.js';
import { BACKENDS, backendSkip, type Backend } from '../../test/support/backends.js';
import { ARTIFACTS, browserSkip, recordTraffic, startChromium, type Traffic } from '../../test/support/browser.js';
import {
  alertWith,
  axeFindings,
  button,
  columnHeader,
  dataRows,
  editor,
  eventually,
  fieldMessage,
  firstRows,
  focused,
  inventoryTable,
  measured,
  measures,
  quantityIn,
  readCounts,
  readRow,
  readRows,
  rowCount,
  rowOf,
  scrollTable,
  searchField,
  signIn,
  SORT_COLUMNS,
  sortButton,
  statusFilter,
  statusWith,
  storedValues,
  type AxeFinding,
  type Box,
  type DomWindow,
  type Focused,
  type MeasureName,
  type RowView,
  type SortColumn,
  type SortDirection,
} from './dashboard-page.js';
import { buildTestApp, type TestApp } from '../../test/support/app.js';
import { importPlan, importSource } from '../../test/support/store.js';

/**
 * The staff dashboard at /dashboard in headless Chromium, on each backend, held to its UI contract:
 * signing in, counts, filter, search, sort, editing (plain, add/remove, conflicts, a double click),
 * history, freshness, the keyboard, axe-core, the page's policy, and 100,000 entries. One browser for
 * the file; one seeded store per backend; each test in a browser context of its own.
 */

const skipBrowser = browserSkip('/dashboard');
const TWO_53 = 2n ** 53n;
const VIEWPORT = { width: 1280, height: 900 };

/** Each test that changes quantities has its pet, so no test sees another's change. */
const PET = {
  edit: 700001n,
  delta: 700002n,
  conflict: 700003n,
  twice: 700004n,
  history: 700005n,
  a11y: 700006n,
  policy: 700007n,
  gone: 700008n,
  lost: 700009n,
  errors: 700010n,
  // Below errors' id: the errors test wants its pet first when the test's pets are sorted by id, descending.
  live: 700000n,
  fallback: 170000n,
} as const;
const OWN_QUANTITY: Record<keyof typeof PET, number> = { edit: 5, delta: 10, conflict: 30, twice: 20, history: 9, a11y: 4, policy: 6, gone: 2, lost: 8, errors: 2, live: 3, fallback: 12 };

/**
 * Pets 1 to 600 (a few out of stock), the int64 edges, both sides of 2^53 and a few negative ids.
 * Ids and statuses never change in these tests, so what a filter or a search shows is known here.
 */
function catalogue(): InventoryItem[] {
  const items: InventoryItem[] = [];
  for (let i = 1; i <= 600; i++) {
    items.push({ petId: BigInt(i), quantity: i % 97 === 5 ? 0 : ((i * 37) % 500) + 1, status: PET_STATUSES[i % 3]! });
  }
  items.push(
    { petId: INT64_MAX, quantity: 2147483647, status: 'sold' },
    { petId: INT64_MIN, quantity: 3, status: 'available' },
    { petId: TWO_53 + 1n, quantity: 7, status: 'pending' },
    { petId: TWO_53, quantity: 8, status: 'pending' },
    { petId: -1n, quantity: 1, status: 'available' },
    { petId: -15n, quantity: 0, status: 'sold' },
  );
  for (const [name, petId] of Object.entries(PET)) items.push({ petId, quantity: OWN_QUANTITY[name as keyof typeof PET], status: 'available' });
  return items;
}

const CATALOGUE = catalogue();
const TOTAL = CATALOGUE.length;
const BY_ID = [...CATALOGUE].sort((a, b) => (a.petId < b.petId ? -1 : a.petId > b.petId ? 1 : 0));

function matching(status: PetStatus | undefined, search = ''): number {
  return CATALOGUE.filter((i) => (status === undefined || i.status === status) && String(i.petId).includes(search)).length;
}

function pick(record: Record<string, string>, keys: string[]): Record<string, string | undefined> {
  return Object.fromEntries(keys.map((k) => [k, record[k]]));
}

function formatted(n: number): string {
  return n.toLocaleString('en-US');
}

let shared: Promise<Browser> | undefined;
/** The file's one browser, started by the first test that needs it. */
function chromiumForFile(): Promise<Browser> {
  shared ??= startChromium();
  return shared;
}
after(async () => {
  if (shared) await (await shared).close();
});

interface Session {
  page: Page;
  context: BrowserContext;
  traffic: Traffic;
}

/** A fresh context (its own storage, cache and cookies), closed when the test ends; an uncaught error in the page fails the test. */
async function session(t: TestContext, viewport = VIEWPORT): Promise<Session> {
  const browser = await chromiumForFile();
  const context = await browser.newContext({ locale: 'en-US', timezoneId: 'UTC', viewport });
  t.after(() => context.close());
  const page = await context.newPage();
  page.setDefaultTimeout(20_000);
  const traffic = recordTraffic(context, page);
  t.after(() => assert.deepEqual(traffic.consoleErrors.filter((e) => e.startsWith('uncaught: ')), [], 'uncaught errors in the page'));
  return { page, context, traffic };
}

/** Opens /dashboard and signs in with `key` (after `before`, given the page); resolves once the first rows show. */
async function signedIn(t: TestContext, api: TestApp, key: string, viewport = VIEWPORT, before?: (page: Page) => Promise<unknown>): Promise<Session> {
  const s = await session(t, viewport);
  await before?.(s.page);
  const loaded = await s.page.goto(`${api.baseUrl}/dashboard`);
  assert.equal(loaded?.status(), 200);
  await signIn(s.page, key);
  await firstRows(s.page);
  return s;
}

/** Narrows the table to the rows whose id holds `text`, and waits until it shows `expected` of them. */
async function search(page: Page, text: string, expected: number): Promise<void> {
  await searchField(page).fill(text);
  await eventually(async () => assert.equal(await rowCount(page), expected + 1, `aria-rowcount after searching "${text}"`));
}

async function screenshot(page: Page, name: string): Promise<void> {
  await mkdir(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`) });
}

/** The entry through the API, as anyone else sees it. */
async function quantityInApi(api: TestApp, petId: bigint): Promise<number> {
  const res = await api.request({ method: 'GET', url: `/v1/inventory/${petId}`, key: api.keys.read });
  assert.equal(res.status, 200, res.text);
  return res.json<{ quantity: number }>().quantity;
}

interface HistoryItem {
  previousQuantity: number;
  quantity: number;
  keyName: string;
  keyId: string;
  reason: string | null;
}

async function historyInApi(api: TestApp, petId: bigint): Promise<HistoryItem[]> {
  const res = await api.request({ method: 'GET', url: `/v1/inventory/${petId}/history?limit=100`, key: api.keys.read });
  assert.equal(res.status, 200, res.text);
  return res.json<{ items: HistoryItem[] }>().items;
}

/** Someone else's change, through the API. */
async function changeInApi(api: TestApp, petId: bigint, quantity: number, reason?: string): Promise<void> {
  const res = await api.request({ method: 'PATCH', url: `/v1/inventory/${petId}`, key: api.keys.write, body: reason ? { quantity, reason } : { quantity } });
  assert.equal(res.status, 200, res.text);
}

function isItemUrl(url: string, petId: bigint): boolean {
  return new URL(url).pathname === `/v1/inventory/${petId}`;
}

/** The PATCHes the page sends for one pet, with their headers and bodies, and the answers. */
function recordPatches(page: Page, petId: bigint): { requests: Request[]; answers: Response[] } {
  const log = { requests: [] as Request[], answers: [] as Response[] };
  page.on('request', (r) => {
    if (r.method() === 'PATCH' && isItemUrl(r.url(), petId)) log.requests.push(r);
  });
  page.on('response', (r) => {
    if (r.request().method() === 'PATCH' && isItemUrl(r.url(), petId)) log.answers.push(r);
  });
  return log;
}

/** The adjustments (POST .../adjustments) the page sends for one pet, with their headers and bodies, and the answers. */
function recordAdjustments(page: Page, petId: bigint): { requests: Request[]; answers: Response[] } {
  const log = { requests: [] as Request[], answers: [] as Response[] };
  const isAdjustment = (r: Request) => r.method() === 'POST' && new URL(r.url()).pathname === `/v1/inventory/${petId}/adjustments`;
  page.on('request', (r) => {
    if (isAdjustment(r)) log.requests.push(r);
  });
  page.on('response', (r) => {
    if (isAdjustment(r.request())) log.answers.push(r);
  });
  return log;
}

/** Clicks Edit on the pet's row and resolves once the editor is open and the page has read the entry's ETag. */
async function openEditor(page: Page, petId: bigint): Promise<string> {
  const read = page.waitForResponse((r) => isItemUrl(r.url(), petId) && r.request().method() === 'GET');
  await button(page, `Edit pet ${petId}`).click();
  const etag = (await read).headers().etag;
  assert.ok(etag, 'the entry was read with its ETag');
  await editor(page, petId).quantity.waitFor();
  return etag;
}

async function savedAs(page: Page, petId: bigint, from: number, to: number): Promise<void> {
  await statusWith(page, `Saved pet ${petId}: ${formatted(from)} → ${formatted(to)}`).waitFor();
  await eventually(async () => assert.equal(quantityIn(await readRow(page, petId)), to, `pet ${petId}'s row`));
}

function compareIds(a: string, b: string): number {
  const [x, y] = [BigInt(a), BigInt(b)];
  return x < y ? -1 : x > y ? 1 : 0;
}

/** How two rows compare in a column, ascending. */
function compareBy(column: SortColumn, a: RowView, b: RowView): number {
  if (column === 'Pet ID') return compareIds(a.petId, b.petId);
  if (column === 'Quantity') return quantityIn(a) - quantityIn(b);
  return PET_STATUSES.indexOf(a.cells[2] as PetStatus) - PET_STATUSES.indexOf(b.cells[2] as PetStatus);
}

/** Clicks a column's sort button, then checks aria-sort and the order of the rows in the DOM; resolves to the direction. */
async function sortAndCheck(page: Page, column: SortColumn, whole = true): Promise<SortDirection> {
  const before = await columnHeader(page, column).getAttribute('aria-sort');
  await measured(page, 'dashboard:sort', () => sortButton(page, column).click());
  const direction = await columnHeader(page, column).getAttribute('aria-sort');
  assert.ok(direction === 'ascending' || direction === 'descending', `${column}: aria-sort is "${direction}"`);
  if (before === 'ascending' || before === 'descending') assert.notEqual(direction, before, `${column}: a click toggles the direction`);
  for (const other of SORT_COLUMNS.filter((c) => c !== column)) assert.equal(await columnHeader(page, other).getAttribute('aria-sort'), null, `${other} has no aria-sort`);
  const rows = await readRows(page);
  assert.equal(rows[0]?.rowIndex, 2, 'the table shows its top');
  for (let i = 1; i < rows.length; i++) {
    const order = compareBy(column, rows[i - 1]!, rows[i]!);
    assert.ok(direction === 'ascending' ? order <= 0 : order >= 0, `${column} ${direction}: row ${i} (${rows[i - 1]!.cells.join(' | ')}) before (${rows[i]!.cells.join(' | ')})`);
  }
  const top = rows[0];
  if (!whole) return direction;
  if (column === 'Pet ID') assert.equal(top.petId, String(direction === 'ascending' ? INT64_MIN : INT64_MAX));
  if (column === 'Quantity') assert.equal(quantityIn(top), direction === 'ascending' ? 0 : 2147483647);
  if (column === 'Status') assert.equal(top.cells[2], direction === 'ascending' ? 'available' : 'sold');
  return direction;
}

/** Tabs through the page until `wanted` has had the focus; resolves to every element that had it, in order. */
async function tabUntil(page: Page, wanted: (f: Focused) => boolean, most = 80): Promise<Focused[]> {
  const seen: Focused[] = [];
  for (let i = 0; i < most; i++) {
    await page.keyboard.press('Tab');
    const now = await focused(page);
    if (!now) continue;
    seen.push(now);
    if (wanted(now)) return seen;
  }
  throw new Error(`Tab never reached it in ${most} presses; focus went to: ${seen.map((f) => `${f.tag}[${f.name}]`).join(', ')}`);
}

function inside(inner: Box, outer: Box): boolean {
  return inner.left >= outer.left - 0.5 && inner.right <= outer.right + 0.5 && inner.top >= outer.top - 0.5 && inner.bottom <= outer.bottom + 0.5;
}

/**
 * `field`'s editor shows `text` where its user looks: in an alert (read out), described by the field
 * (marked invalid when it is the one at fault), whole (nothing cut or clipped), in the viewport, in the
 * field's row and table, just below the field; and no "Saved ..." from before stays beside it.
 */
async function assertShownBeside(page: Page, field: Locator, text: string, invalid: boolean): Promise<void> {
  await alertWith(page, text).waitFor();
  const shown = await eventually(async () => {
    const m = await fieldMessage(field);
    assert.ok(m, 'the field has aria-describedby, naming the message');
    assert.ok(m.text.includes(text), `the field is described by "${m.text}"`);
    return m;
  });
  const where = JSON.stringify(shown);
  assert.equal(shown.live, 'alert', `in an alert region: ${where}`);
  assert.equal(shown.invalid, String(invalid), `aria-invalid: ${where}`);
  assert.ok(shown.box.right - shown.box.left > 0 && shown.box.bottom - shown.box.top > 0, `it has a size: ${where}`);
  assert.ok(inside(shown.box, { left: 0, top: 0, right: shown.viewport.width, bottom: shown.viewport.height }), `in the viewport: ${where}`);
  assert.ok(inside(shown.box, shown.row), `in the field's row: ${where}`);
  if (shown.nextRow) assert.ok(shown.nextRow.top >= shown.row.bottom - 0.5, `the next row starts below it: ${where}`);
  assert.ok(inside(shown.box, shown.table), `in the table: ${where}`);
  assert.deepEqual(shown.clippedBy, [], `no ancestor clips it: ${where}`);
  assert.equal(shown.overflows, false, `its text fits its box: ${where}`);
  const gap = shown.box.top - shown.field.bottom;
  assert.ok(gap >= 0 && gap <= 24, `just below the field (${gap} px): ${where}`);
  assert.ok(shown.box.left <= shown.field.right && shown.box.right >= shown.field.left, `under the field, not off to a side: ${where}`);
  assert.equal(await statusWith(page, 'Saved pet').count(), 0, 'the "Saved ..." from before is gone');
}

/** Waits until the page says it is live, or not (the word beside the refresh time). */
async function liveState(page: Page, state: 'Live' | 'Not live', timeout = 15_000): Promise<void> {
  await page.locator('.freshness').getByText(state, { exact: true }).waitFor({ timeout });
}

/** Every answer to GET /v1/inventory from now on. */
function recordLists(page: Page): Response[] {
  const lists: Response[] = [];
  page.on('response', (r) => {
    if (new URL(r.url()).pathname === '/v1/inventory' && r.request().method() === 'GET') lists.push(r);
  });
  return lists;
}

/**
 * With a filter, a search, a sort, the table scrolled, one row's history open and another row in an editor with a typed
 * value, `change` has someone else change a third row's quantity and waits until the page shows it; everything the user
 * set up is still as it was.
 */
async function othersChangeKeepsPlace(page: Page, api: TestApp, change: (petId: bigint, quantity: number) => Promise<void>): Promise<void> {
  await statusFilter(page).selectOption({ label: 'available' });
  await search(page, '1', matching('available', '1'));
  await sortAndCheck(page, 'Pet ID', false);
  assert.equal(await columnHeader(page, 'Pet ID').getAttribute('aria-sort'), 'descending');
  await scrollTable(page, 1000);
  const shown = await eventually(async () => {
    const rows = await readRows(page);
    assert.ok(rows.length >= 6 && rows[0]!.rowIndex > 2, 'the rows further down');
    return rows;
  });
  const middle = Math.floor(shown.length / 2);
  const [selected, mine, theirs] = [shown[middle - 1]!, shown[middle]!, shown[middle + 1]!];
  const [selectedPet, minePet, theirsPet] = [BigInt(selected.petId), BigInt(mine.petId), BigInt(theirs.petId)];
  await button(page, `History of pet ${selectedPet}`).click();
  const history = page.getByRole('region', { name: `History of pet ${selectedPet}`, exact: true });
  await history.waitFor();
  await openEditor(page, minePet);
  await editor(page, minePet).quantity.fill('123');
  const scrolled = await scrollTable(page);
  assert.ok(scrolled > 0, 'the table is scrolled');

  const was = quantityIn(theirs);
  await change(theirsPet, was + 1000);
  assert.ok(Math.abs((await scrollTable(page)) - scrolled) <= 2, 'the scroll position stays');
  assert.equal(await editor(page, minePet).quantity.inputValue(), '123', 'the typed value stays');
  assert.equal(await button(page, `History of pet ${selectedPet}`).getAttribute('aria-pressed'), 'true', 'the selected row stays selected');
  assert.ok(await history.isVisible(), 'its history stays open');
  assert.equal(await searchField(page).inputValue(), '1');
  assert.equal(await statusFilter(page).inputValue(), 'available');
  assert.equal(await columnHeader(page, 'Pet ID').getAttribute('aria-sort'), 'descending');
  assert.equal(await rowCount(page), matching('available', '1') + 1);
  await page.keyboard.press('Escape');
  await editor(page, minePet).quantity.waitFor({ state: 'detached' });
  await button(history, 'Close history').click();
  // Left as it was found, for the tests after this one.
  await changeInApi(api, theirsPet, was);
}

function serious(findings: AxeFinding[], state: string): string[] {
  return findings.filter((f) => f.impact === 'serious' || f.impact === 'critical').map((f) => `${state}: ${f.rule} (${f.impact}): ${f.help} at ${f.targets.join(' ')}`);
}

for (const backend of BACKENDS) {
  const skip = (await backendSkip(backend)) || skipBrowser;
  test(`${backend}: the dashboard in headless Chromium`, { skip, timeout: 600_000 }, async (t) => {
    const api = await buildTestApp(t, { transport: 'http', backend, items: CATALOGUE });
    await dashboardTests(t, api, backend);
  });
}

async function dashboardTests(t: TestContext, api: TestApp, backend: Backend): Promise<void> {
  const timeout = 90_000;

  await t.test('sign in: the rows in petId order, exact int64 ids, "Showing N of M"; the key in sessionStorage only; sign out', { timeout }, async (st) => {
    const { page, context } = await session(st);
    assert.equal((await page.goto(`${api.baseUrl}/dashboard`))?.status(), 200);
    assert.equal(await page.getByLabel('API key', { exact: true }).getAttribute('type'), 'password');
    await signIn(page, api.keys.write);
    await firstRows(page);
    await eventually(async () => assert.ok((await measures(page, 'dashboard:first-rows')).length > 0, 'the first-rows measure'));

    assert.equal(await rowCount(page), TOTAL + 1, 'aria-rowcount: every row and the header');
    await page.getByText(`Showing ${formatted(TOTAL)} of ${formatted(TOTAL)}`).waitFor();
    const headers = (await inventoryTable(page).getByRole('columnheader').allTextContents()).map((h) => h.trim());
    for (const [i, name] of ['Pet ID', 'Quantity', 'Status', 'Actions'].entries()) assert.ok(headers[i]?.startsWith(name), `column ${i + 1}: ${headers.join(' | ')}`);
    assert.equal(await columnHeader(page, 'Pet ID').getAttribute('aria-sort'), 'ascending');

    const rows = await readRows(page);
    assert.ok(rows.length >= 10, `${rows.length} rows in the DOM`);
    rows.forEach((row, i) => {
      const item = BY_ID[i]!;
      assert.equal(row.rowIndex, i + 2, 'aria-rowindex counts from 2 (the header is 1)');
      assert.equal(row.petId, String(item.petId), 'data-pet-id: the exact digits');
      assert.equal(row.cells[0], String(item.petId), 'the Pet ID cell: plain digits');
      assert.equal(quantityIn(row), item.quantity);
      assert.equal(row.cells[2], item.status);
      assert.equal(row.classes.includes('out-of-stock'), item.quantity === 0, `pet ${item.petId}: out-of-stock class`);
      if (item.quantity === 0) assert.match(row.cells[1]!, /Out of stock/);
    });
    assert.equal(rows[0]!.petId, '-9223372036854775808');
    assert.ok(rows.some((r) => r.classes.includes('out-of-stock')), 'an out-of-stock row (pet -15) is among the first');

    const stored = await storedValues(page);
    assert.ok(stored.session.some((v) => v.includes(api.keys.write)), 'the key is in sessionStorage');
    assert.deepEqual(stored.local.filter((v) => v.includes(api.keys.write)), [], 'nor in localStorage');
    assert.deepEqual(await context.cookies(), [], 'no cookies');
    await screenshot(page, `dashboard-${backend}-table`);
    if (backend === BACKENDS[0]) {
      // The README's picture: a fixed size, the table at rest.
      await page.setViewportSize({ width: 1280, height: 800 });
      await firstRows(page);
      await mkdir(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: join(ARTIFACTS, 'dashboard.png') });
    }

    await button(page, 'Sign out').click();
    await page.getByLabel('API key', { exact: true }).waitFor();
    assert.equal(await inventoryTable(page).count(), 0, 'no table once signed out');
    assert.deepEqual((await storedValues(page)).session.filter((v) => v.includes(api.keys.write)), [], 'the key left sessionStorage');
  });

  await t.test("the counts by status, in the reader's locale", { timeout }, async (st) => {
    const { page } = await signedIn(st, api, api.keys.write);
    const shown = await readCounts(page);
    assert.deepEqual(pick(shown, ['Available', 'Pending', 'Sold', 'Total']), {
      Available: formatted(matching('available')),
      Pending: formatted(matching('pending')),
      Sold: formatted(matching('sold')),
      Total: formatted(TOTAL),
    });
  });

  await t.test('a reload signs in again with the key kept in sessionStorage, its first rows measured from the page load', { timeout }, async (st) => {
    const { page, traffic } = await signedIn(st, api, api.keys.write);
    await page.reload();
    await firstRows(page).catch((err: Error) => {
      throw new Error(`no rows after a reload (${err.message.split('\n')[0]}); console: ${traffic.consoleErrors.join(' | ') || 'nothing'}`);
    });
    await eventually(async () => assert.ok((await measures(page, 'dashboard:first-rows')).length > 0, 'a first-rows measure'));
    assert.equal(await page.getByLabel('API key', { exact: true }).count(), 0, 'no sign-in form');
  });

  await t.test('a wrong key is not accepted: an alert says so and the sign-in form stays', { timeout }, async (st) => {
    const { page } = await session(st);
    await page.goto(`${api.baseUrl}/dashboard`);
    for (const wrong of [`inv_live_${'0'.repeat(40)}`, 'not a key at all']) {
      await signIn(page, wrong);
      await alertWith(page, 'not accepted').waitFor();
      assert.ok(await page.getByLabel('API key', { exact: true }).isVisible(), 'the sign-in form stays');
      assert.equal(await inventoryTable(page).count(), 0);
      assert.equal(await button(page, 'Sign out').count(), 0);
    }
  });

  await t.test('a read-only key: a note says so; no Edit button, no Save button', { timeout }, async (st) => {
    const { page } = await signedIn(st, api, api.keys.read);
    await page.getByText(/read-only/i).first().waitFor();
    assert.equal(await page.getByRole('button', { name: /^Edit\b/ }).count(), 0, 'no Edit buttons');
    assert.equal(await button(page, 'Save').count(), 0, 'no Save button');
    assert.equal(await rowCount(page), TOTAL + 1);
  });

  await t.test('filter by status: its rows only, aria-rowcount, "Showing N of M"', { timeout }, async (st) => {
    const { page } = await signedIn(st, api, api.keys.write);
    const filter = statusFilter(page);
    assert.deepEqual((await filter.locator('option').allTextContents()).map((o) => o.trim()), ['All statuses', ...PET_STATUSES]);
    for (const status of [...PET_STATUSES, undefined]) {
      await measured(page, 'dashboard:filter', () => filter.selectOption({ label: status ?? 'All statuses' }).then(() => undefined));
      const n = matching(status);
      assert.equal(await rowCount(page), n + 1, `${status ?? 'all'}: aria-rowcount`);
      await page.getByText(`Showing ${formatted(n)} of ${formatted(TOTAL)}`).waitFor();
      const shown = await readRows(page);
      if (status) assert.deepEqual([...new Set(shown.map((r) => r.cells[2]))], [status]);
      assert.deepEqual(
        shown.map((r) => r.petId),
        BY_ID.filter((i) => !status || i.status === status)
          .slice(0, shown.length)
          .map((i) => String(i.petId)),
        'in petId order, from the first',
      );
    }
  });

  await t.test('search by pet ID: the digits contained, a leading minus, ids beyond 2^53 exact', { timeout }, async (st) => {
    const { page } = await signedIn(st, api, api.keys.write);
    const ids = async () => (await readRows(page)).map((r) => r.petId);
    const cases: [string, string[]][] = [
      ['9007199254740993', ['9007199254740993']],
      ['900719925474099', ['9007199254740992', '9007199254740993']],
      ['9223372036854775807', ['9223372036854775807']],
      ['922337203685477580', ['-9223372036854775808', '9223372036854775807']],
      ['-', ['-9223372036854775808', '-15', '-1']],
      ['-1', ['-15', '-1']],
    ];
    for (const [text, expected] of cases) {
      await measured(page, 'dashboard:filter', () => search(page, text, expected.length));
      assert.deepEqual(await ids(), expected, `search "${text}"`);
      for (const row of await readRows(page)) assert.equal(row.cells[0], row.petId, 'the id shown digit for digit');
      await page.getByText(`Showing ${formatted(expected.length)} of ${formatted(TOTAL)}`).waitFor();
    }
    assert.equal(quantityIn(await readRow(page, '-15')), 0);
    // With a filter: both apply.
    await search(page, '1', matching(undefined, '1'));
    await statusFilter(page).selectOption({ label: 'sold' });
    await eventually(async () => assert.equal(await rowCount(page), matching('sold', '1') + 1));
    await search(page, '', matching('sold'));
  });

  await t.test('sort by each column, both ways: aria-sort on its header, the rows in order', { timeout }, async (st) => {
    const { page } = await signedIn(st, api, api.keys.write);
    for (const column of SORT_COLUMNS) {
      const first = await sortAndCheck(page, column);
      const second = await sortAndCheck(page, column);
      assert.deepEqual([first, second].sort(), ['ascending', 'descending'], `${column}: both directions`);
    }
    assert.equal((await measures(page, 'dashboard:sort')).length, 6);
  });

  await t.test('edit a quantity: If-Match and a fresh Idempotency-Key, the reason in the history; Escape and Cancel; an error in words', { timeout }, async (st) => {
    const petId = PET.edit;
    const { page } = await signedIn(st, api, api.keys.write);
    const patches = recordPatches(page, petId);
    await search(page, String(petId), 1);

    const etag = await openEditor(page, petId);
    const fields = editor(page, petId);
    assert.equal(await fields.quantity.getAttribute('type'), 'number');
    assert.equal(await fields.quantity.inputValue(), '5');
    assert.equal(await fields.reason.inputValue(), 'correction', 'the reason defaults to correction');
    assert.deepEqual((await fields.reason.locator('option').allTextContents()).map((o) => o.trim()), [...CHANGE_REASONS]);
    await fields.quantity.fill('17');
    await fields.reason.selectOption('received');
    await screenshot(page, `dashboard-${backend}-editor`);
    await button(page, 'Save').click();
    await savedAs(page, petId, 5, 17);
    assert.equal(await quantityInApi(api, petId), 17);
    const [change] = await historyInApi(api, petId);
    assert.deepEqual({ ...change, keyId: undefined }, { ...change, keyId: undefined, previousQuantity: 5, quantity: 17, reason: 'received', keyName: 'test inventory:write' });

    const first = patches.requests[0]!.headers();
    assert.equal(first['if-match'], etag, 'If-Match: the ETag read when Edit was clicked');
    assert.ok(first['idempotency-key'], 'an Idempotency-Key');

    await openEditor(page, petId);
    await fields.quantity.fill('18');
    await button(page, 'Save').click();
    await savedAs(page, petId, 17, 18);
    const keys = patches.requests.map((r) => r.headers()['idempotency-key']);
    assert.equal(new Set(keys).size, 2, `a fresh key per save: ${keys.join(', ')}`);

    // Escape and Cancel leave the entry as it was.
    await openEditor(page, petId);
    await fields.quantity.fill('99');
    await page.keyboard.press('Escape');
    await fields.quantity.waitFor({ state: 'detached' });
    await openEditor(page, petId);
    await fields.quantity.fill('98');
    await button(page, 'Cancel').click();
    await fields.quantity.waitFor({ state: 'detached' });
    assert.equal(quantityIn(await readRow(page, petId)), 18);

    // A count beyond int32 is refused, by the page or by the service, in words.
    await openEditor(page, petId);
    await fields.quantity.fill('2147483648');
    await button(page, 'Save').click();
    await alertWith(page, /quantity/i).waitFor();
    assert.equal(await quantityInApi(api, petId), 18);
    await page.keyboard.press('Escape');
    await fields.quantity.waitFor({ state: 'detached' });
    // The page refuses it itself, before any request; and Escape and Cancel sent nothing.
    assert.equal(patches.requests.length, 2, `${patches.requests.length} PATCHes`);
  });

  await t.test("an error only the service can see is shown in the service's words", { timeout }, async (st) => {
    const petId = PET.gone;
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    // The page must not hear of the retirement before Save: its stream of changes is held from the start (so it polls).
    const { page } = await signedIn(st, api, api.keys.write, VIEWPORT, (p) =>
      p.route(`${api.baseUrl}/v1/events/stream`, async (route) => {
        await held;
        await route.continue();
      }),
    );
    await search(page, String(petId), 1);
    await openEditor(page, petId);
    await editor(page, petId).quantity.fill('3');
    // Retired after the editor read it; the page's next refresh is held back too, so the row is still there to save.
    await page.route(`${api.baseUrl}/v1/inventory`, async (route) => {
      await held;
      await route.continue();
    });
    const retired = await api.store.changes.retireEntry(petId, { force: true, at: new Date() });
    assert.equal(retired.kind, 'retired');
    try {
      await button(page, 'Save').click();
      const said = alertWith(page, `Pet ${petId} has no inventory entry`);
      await said.waitFor();
      assert.doesNotMatch((await said.textContent()) ?? '', /^\s*not_found\s*$/);
    } finally {
      release();
      // Once the held request has gone on: a route removed while its handler still waits is let through by the browser, and the handler's own continue then fails.
      await page.unrouteAll({ behavior: 'wait' });
      // Back for the tests after this one, which count every entry.
      await api.store.changes.addItems([{ petId, quantity: OWN_QUANTITY.gone, status: 'available' }]);
    }
  });

  await t.test('add or remove: the quantity follows the signed change; typing a quantity clears it; saved as an adjustment, applied to what someone else saved meanwhile', { timeout }, async (st) => {
    const petId = PET.delta;
    const { page } = await signedIn(st, api, api.keys.write);
    const patches = recordPatches(page, petId);
    const adjustments = recordAdjustments(page, petId);
    await search(page, String(petId), 1);
    await openEditor(page, petId);
    const fields = editor(page, petId);
    for (const [delta, quantity] of [
      ['5', '15'],
      ['-2', '8'],
    ]) {
      await fields.delta.fill(delta!);
      await eventually(async () => assert.equal(await fields.quantity.inputValue(), quantity, `base 10 and ${delta}`));
    }
    await fields.quantity.fill('20');
    await eventually(async () => assert.equal(await fields.delta.inputValue(), '', 'typing a quantity clears the change'));
    await fields.delta.fill('-3');
    await eventually(async () => assert.equal(await fields.quantity.inputValue(), '7'));
    await fields.reason.selectOption('sold');
    await button(page, 'Save').click();
    await savedAs(page, petId, 10, 7);
    assert.equal(await quantityInApi(api, petId), 7);
    assert.equal((await historyInApi(api, petId))[0]?.reason, 'sold');
    assert.equal(patches.requests.length, 0, 'no PATCH: an add-or-remove is an adjustment');
    // The body itself is not visible here (the client sends a copy it may retry); the history above shows the -3 and its reason.
    const [sent] = adjustments.requests;
    assert.equal(adjustments.requests.length, 1, 'one adjustment');
    assert.ok(sent?.headers()['idempotency-key'], 'an Idempotency-Key');
    assert.equal(sent?.headers()['if-match'], undefined, 'no If-Match: the service applies it to the count it holds');

    // Someone else saved meanwhile: no conflict, the change applies to their count.
    await openEditor(page, petId);
    await fields.delta.fill('+4');
    await changeInApi(api, petId, 40, 'received');
    await button(page, 'Save').click();
    await savedAs(page, petId, 40, 44);
    assert.equal(await alertWith(page, 'changed by someone else').count(), 0, 'no conflict');
    assert.equal(await quantityInApi(api, petId), 44);
    assert.deepEqual(
      (await historyInApi(api, petId)).slice(0, 2).map((h) => [h.previousQuantity, h.quantity]),
      [[40, 44], [7, 40]],
      'theirs, then mine on top of it',
    );
    const keys = adjustments.requests.map((r) => r.headers()['idempotency-key']);
    assert.equal(new Set(keys).size, 2, `a fresh key per save: ${keys.join(', ')}`);
  });

  await t.test('a conflict over a count set: overwrite with mine, or keep their value', { timeout }, async (st) => {
    const petId = PET.conflict;
    const { page } = await signedIn(st, api, api.keys.write);
    const patches = recordPatches(page, petId);
    await search(page, String(petId), 1);
    const fields = editor(page, petId);
    const conflict = () => alertWith(page, `Pet ${petId} was changed by someone else`);

    // Mine over theirs.
    await openEditor(page, petId);
    await fields.quantity.fill('15');
    await changeInApi(api, petId, 50);
    await button(page, 'Save').click();
    await conflict().waitFor();
    assert.match((await conflict().textContent()) ?? '', /It now holds 50\b/);
    await screenshot(page, `dashboard-${backend}-conflict`);
    const refused = patches.answers.at(-1)!;
    assert.equal(refused.status(), 412);
    assert.deepEqual((await conflict().getByRole('button').allTextContents()).map((b) => b.trim()), ['Keep their value', 'Overwrite with mine']);
    await button(conflict(), 'Overwrite with mine').click();
    await savedAs(page, petId, 50, 15);
    assert.equal(patches.requests.at(-1)!.headers()['if-match'], refused.headers().etag, 'saved with the ETag of their version');
    assert.equal(await quantityInApi(api, petId), 15);

    // Theirs kept: nothing written.
    await openEditor(page, petId);
    await fields.quantity.fill('16');
    await changeInApi(api, petId, 60);
    await button(page, 'Save').click();
    await conflict().waitFor();
    const sent = patches.requests.length;
    await button(conflict(), 'Keep their value').click();
    await fields.quantity.waitFor({ state: 'detached' });
    await eventually(async () => assert.equal(quantityIn(await readRow(page, petId)), 60));
    assert.equal(patches.requests.length, sent, 'keeping theirs sends nothing');
    assert.equal(await quantityInApi(api, petId), 60);
    const [last] = await historyInApi(api, petId);
    assert.deepEqual([last?.previousQuantity, last?.quantity], [15, 60], 'the last change is theirs');
  });

  await t.test('errors where the user looks (1280×800): beside the field, whole, in view, read out, tied to the field; the last "Saved" goes', { timeout }, async (st) => {
    const petId = PET.errors;
    const { page } = await signedIn(st, api, api.keys.write, { width: 1280, height: 800 });
    // The test's pets, this one first: the rows below it must make room for its message.
    await search(page, '7000', Object.keys(PET).length);
    await sortButton(page, 'Pet ID').click();
    await eventually(async () => assert.equal((await readRows(page))[0]?.petId, String(petId)));
    const fields = editor(page, petId);

    // What a newcomer met: the last 2 sold and saved, then 5 more removed: the service refuses it (409 insufficient_stock).
    await openEditor(page, petId);
    await fields.delta.fill('-2');
    await button(page, 'Save').click();
    await savedAs(page, petId, 2, 0);
    const adjustments = recordAdjustments(page, petId);
    await openEditor(page, petId);
    await fields.delta.fill('-5');
    await button(page, 'Save').click();
    await assertShownBeside(page, fields.delta, `Pet ${petId} has 0 on hand; a delta of -5 would take the count below 0. Nothing changed.`, true);
    assert.equal(adjustments.answers.at(-1)?.status(), 409);
    assert.equal(await fields.quantity.getAttribute('aria-invalid'), 'false', 'the add-or-remove is at fault, not the count');
    await screenshot(page, `dashboard-${backend}-error`);
    const found = serious(await axeFindings(page), 'an error below the fields');
    // Typing again clears it.
    await fields.delta.fill('+5');
    await eventually(async () => assert.equal(await fieldMessage(fields.delta), null, 'no message once the field changes'));
    await alertWith(page, 'on hand').waitFor({ state: 'detached' });

    // Refused against a count the page had not seen: the message names the count on hand, and the editor and the row take it.
    await fields.delta.fill('-5');
    await changeInApi(api, petId, 3);
    await button(page, 'Save').click();
    await assertShownBeside(page, fields.delta, `Pet ${petId} has 3 on hand; a delta of -5 would take the count below 0. Nothing changed.`, true);
    await eventually(async () => assert.equal(await fields.quantity.inputValue(), '-2', 'the -5 worked out again from 3'));
    await fields.delta.fill('-3');
    await eventually(async () => assert.equal(await fields.quantity.inputValue(), '0'));
    await button(page, 'Save').click();
    await savedAs(page, petId, 3, 0);
    const keys = adjustments.requests.map((r) => r.headers()['idempotency-key']);
    assert.equal(new Set(keys).size, 3, `a fresh key after each refusal: ${keys.join(', ')}`);
    await openEditor(page, petId);

    // Numbers that are not whole.
    await fields.delta.fill('5x');
    await button(page, 'Save').click();
    await assertShownBeside(page, fields.delta, 'Enter what arrived as +5, or what left as -2.', true);
    await fields.quantity.fill('2.5');
    await button(page, 'Save').click();
    await assertShownBeside(page, fields.quantity, 'Enter the new quantity as a whole number.', true);
    await page.keyboard.press('Escape');
    await fields.quantity.waitFor({ state: 'detached' });

    // A save that never reaches the service: its longest message, in this window, then beside the history panel in a narrower one.
    await openEditor(page, petId);
    await fields.quantity.fill('4');
    await button(page, 'Save').click();
    await savedAs(page, petId, 0, 4);
    await page.route(
      (url) => isItemUrl(url.href, petId),
      (route) => (route.request().method() === 'PATCH' ? route.abort('failed') : route.continue()),
    );
    await openEditor(page, petId);
    await fields.quantity.fill('6');
    await button(page, 'Save').click();
    await assertShownBeside(page, fields.quantity, 'The service could not be reached', false);
    await page.keyboard.press('Escape');
    await fields.quantity.waitFor({ state: 'detached' });
    await button(page, `History of pet ${petId}`).click();
    const history = page.getByRole('region', { name: `History of pet ${petId}`, exact: true });
    await history.waitFor();
    await page.setViewportSize({ width: 1024, height: 768 });
    await openEditor(page, petId);
    await fields.quantity.fill('6');
    await button(page, 'Save').click();
    await assertShownBeside(page, fields.quantity, 'The service could not be reached', false);
    await button(history, 'Close history').click();
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.unrouteAll({ behavior: 'wait' });
    await button(page, 'Save').click();
    await savedAs(page, petId, 4, 6);

    // A conflict: its choice beside the fields too, and the focus on it.
    await openEditor(page, petId);
    await fields.quantity.fill('7');
    await changeInApi(api, petId, 9);
    await button(page, 'Save').click();
    await assertShownBeside(page, fields.quantity, `Pet ${petId} was changed by someone else`, false);
    const keep = button(alertWith(page, `Pet ${petId} was changed by someone else`), 'Keep their value');
    await eventually(async () => assert.ok(await keep.evaluate((el) => el === (globalThis as unknown as DomWindow).document.activeElement), 'the focus is on "Keep their value"'));
    found.push(...serious(await axeFindings(page), 'a conflict below the fields'));
    assert.deepEqual(found, [], 'axe-core: nothing serious or critical');
    await keep.click();
    await fields.quantity.waitFor({ state: 'detached' });
    await eventually(async () => assert.equal(quantityIn(await readRow(page, petId)), 9));
  });

  await t.test('a double click on Save applies the change once', { timeout }, async (st) => {
    const petId = PET.twice;
    const { page } = await signedIn(st, api, api.keys.write);
    const patches = recordPatches(page, petId);
    await search(page, String(petId), 1);
    await openEditor(page, petId);
    await editor(page, petId).quantity.fill('21');
    await button(page, 'Save').dblclick();
    await savedAs(page, petId, 20, 21);
    await eventually(async () => assert.equal(patches.answers.length, patches.requests.length, 'every PATCH answered'));
    const history = await historyInApi(api, petId);
    assert.deepEqual(
      history.map((h) => [h.previousQuantity, h.quantity]),
      [[20, 21]],
      'one change',
    );
    assert.equal(new Set(patches.requests.map((r) => r.headers()['idempotency-key'])).size, 1, 'a second PATCH, if any, is the same save');
    assert.equal(await alertWith(page, 'changed by someone else').count(), 0, 'no conflict with itself');
    assert.equal(await quantityInApi(api, petId), 21);
  });

  await t.test('a save whose answer is lost is sent again with the same Idempotency-Key and applied once', { timeout }, async (st) => {
    const petId = PET.lost;
    const { page } = await signedIn(st, api, api.keys.write);
    const patches = recordPatches(page, petId);
    // The first PATCH reaches the service, which applies it; its answer is lost on the way back.
    let lost = 0;
    await page.route(
      (url) => isItemUrl(url.href, petId),
      async (route) => {
        if (route.request().method() !== 'PATCH' || lost > 0) return route.continue();
        lost++;
        await route.fetch();
        await route.abort('connectionreset');
      },
    );
    await search(page, String(petId), 1);
    await openEditor(page, petId);
    await editor(page, petId).quantity.fill('11');
    await button(page, 'Save').click();
    await savedAs(page, petId, 8, 11);
    assert.equal(lost, 1, 'the first answer was lost');
    assert.equal(patches.requests.length, 2, 'sent again');
    const keys = patches.requests.map((r) => r.headers()['idempotency-key']);
    assert.ok(keys[0] && keys[0] === keys[1], `the same Idempotency-Key: ${keys.join(', ')}`);
    assert.equal(patches.answers.length, 1);
    assert.equal(await patches.answers[0]!.headerValue('idempotent-replayed'), 'true', 'the service answered the retry from its record');
    const history = await historyInApi(api, petId);
    assert.deepEqual(
      history.map((h) => [h.previousQuantity, h.quantity]),
      [[8, 11]],
      'applied once',
    );
    assert.equal(await alertWith(page, 'changed by someone else').count(), 0, 'no conflict with itself');

    // An add-or-remove the same way: an adjustment sent twice would sell two.
    const adjustments = recordAdjustments(page, petId);
    let lostAdjustments = 0;
    await page.route(
      (url) => url.pathname === `/v1/inventory/${petId}/adjustments`,
      async (route) => {
        if (lostAdjustments > 0) return route.continue();
        lostAdjustments++;
        await route.fetch();
        await route.abort('connectionreset');
      },
    );
    await openEditor(page, petId);
    await editor(page, petId).delta.fill('-1');
    await button(page, 'Save').click();
    await savedAs(page, petId, 11, 10);
    assert.equal(lostAdjustments, 1, 'the first answer was lost');
    const adjustmentKeys = adjustments.requests.map((r) => r.headers()['idempotency-key']);
    assert.ok(adjustmentKeys.length === 2 && adjustmentKeys[0] && adjustmentKeys[0] === adjustmentKeys[1], `sent again with the same Idempotency-Key: ${adjustmentKeys.join(', ')}`);
    assert.equal(await adjustments.answers[0]!.headerValue('idempotent-replayed'), 'true');
    assert.deepEqual(
      (await historyInApi(api, petId)).map((h) => [h.previousQuantity, h.quantity]),
      [[11, 10], [8, 11]],
      'the adjustment applied once',
    );
  });

  await t.test('the history panel: newest first, 20 a page, older changes to the end, then closed', { timeout }, async (st) => {
    const petId = PET.history;
    const reasons = (n: number) => CHANGE_REASONS[n % CHANGE_REASONS.length]!;
    for (let n = 1; n <= 45; n++) await changeInApi(api, petId, n, reasons(n));
    const writer = (await api.store.keys.listApiKeys()).find((k) => k.scopes.includes('inventory:write'))!;
    const { page } = await signedIn(st, api, api.keys.write);
    const asked: URL[] = [];
    page.on('request', (r) => {
      const url = new URL(r.url());
      if (url.pathname === `/v1/inventory/${petId}/history`) asked.push(url);
    });
    await search(page, String(petId), 1);
    await button(page, `History of pet ${petId}`).click();
    const panel = page.getByRole('region', { name: `History of pet ${petId}`, exact: true });
    await panel.waitFor();
    const headers = (await panel.getByRole('columnheader').allTextContents()).map((h) => h.trim());
    assert.deepEqual(headers, ['When', 'Who', 'From', 'To', 'Reason']);
    const rows = panel.locator('tr:has(td)');
    const cells = async (i: number) => (await rows.nth(i).locator('th, td').allTextContents()).map((c) => c.trim());
    await eventually(async () => assert.equal(await rows.count(), 20));
    const [when, who, from, to, reason] = await cells(0);
    assert.ok(when, 'When is shown');
    assert.ok(who?.includes(writer.name) || who?.includes(writer.id), `Who names the key: ${who}`);
    assert.deepEqual([from, to, reason], ['44', '45', reasons(45)]);
    await screenshot(page, `dashboard-${backend}-history`);

    const older = button(panel, 'Older changes');
    await older.click();
    await eventually(async () => assert.equal(await rows.count(), 40));
    await older.click();
    await eventually(async () => assert.equal(await rows.count(), 45));
    await older.waitFor({ state: 'detached' });
    assert.deepEqual((await cells(44)).slice(2), ['9', '1', reasons(1)], 'the oldest change last');
    assert.deepEqual(
      asked.map((u) => u.searchParams.get('limit')),
      ['20', '20', '20'],
      'three pages of 20',
    );
    assert.deepEqual(
      asked.map((u) => u.searchParams.has('cursor')),
      [false, true, true],
    );

    await button(panel, 'Close history').click();
    await panel.waitFor({ state: 'detached' });
  });

  await t.test("live: someone else's change shows in its row within 2 s, the page says Live; scroll, filter, search, sort, the selected row and an open editor stay", { timeout }, async (st) => {
    const { page } = await signedIn(st, api, api.keys.write);
    await liveState(page, 'Live');
    const lists = recordLists(page);
    await othersChangeKeepsPlace(page, api, async (petId, quantity) => {
      const listsBefore = lists.length;
      await changeInApi(api, petId, quantity);
      // The stream, not a poll: the promise is "as they happen", and the polls are 5 s apart.
      await eventually(async () => assert.equal(quantityIn(await readRow(page, petId)), quantity), 2_000);
      assert.equal(lists.length, listsBefore, 'no list was asked for: the change came by the stream');
    });
    await liveState(page, 'Live');

    // An entry that appears, and one retired, take and leave their place in the open table.
    await statusFilter(page).selectOption({ label: 'All statuses' });
    const ours = matching(undefined, '70000');
    await search(page, '70000', ours);
    await changeInApi(api, PET.live, 33);
    await eventually(async () => assert.equal(quantityIn(await readRow(page, PET.live)), 33), 2_000);
    await api.store.changes.retireEntry(PET.live, { force: true, at: new Date() });
    await eventually(async () => assert.equal(await rowCount(page), ours), 2_000);
    await page.getByText(`Showing ${ours - 1} of ${formatted(TOTAL - 1)}`).waitFor();
    await api.store.changes.addItems([{ petId: PET.live, quantity: OWN_QUANTITY.live, status: 'available' }]);
    await eventually(async () => assert.equal(quantityIn(await readRow(page, PET.live)), OWN_QUANTITY.live), 2_000);
    await page.getByText(`Showing ${ours} of ${formatted(TOTAL)}`).waitFor();
  });

  await t.test('the stream refused: the page says Not live, asks for the list with If-None-Match every 5 s, shows a change from it; live again once the stream is back', { timeout }, async (st) => {
    let refuse = true;
    const refusals: string[] = [];
    const { page } = await signedIn(st, api, api.keys.write, VIEWPORT, (p) =>
      p.route(`${api.baseUrl}/v1/events/stream`, (route) => {
        if (!refuse) return route.continue();
        refusals.push(route.request().headers()['last-event-id'] ?? '');
        return route.fulfill({
          status: 503,
          contentType: 'application/json',
          headers: { 'retry-after': '1' },
          body: JSON.stringify({ code: 'service_unavailable', message: 'Too many event streams (test)', status: 503 }),
        });
      }),
    );
    await liveState(page, 'Not live');
    const lists = recordLists(page);
    const refreshed = page.getByText(/Last refreshed \d{1,2}:\d{2}:\d{2}/);
    await refreshed.waitFor();
    const firstCheck = await refreshed.textContent();
    // Nothing changed yet: the next check is a 304.
    await eventually(async () => {
      const unchanged = lists.find((r) => r.status() === 304);
      assert.ok(unchanged, `a 304 among ${lists.map((r) => r.status()).join(', ')}`);
      assert.ok((await unchanged.request().allHeaders())['if-none-match'], 'asked with If-None-Match');
    }, 15_000);
    await othersChangeKeepsPlace(page, api, async (petId, quantity) => {
      await changeInApi(api, petId, quantity);
      await eventually(async () => assert.equal(quantityIn(await readRow(page, petId)), quantity), 15_000);
    });
    assert.notEqual(await refreshed.textContent(), firstCheck, 'Last refreshed moved on');
    assert.ok(refusals.length >= 2, `the stream was asked for again: ${refusals.length} times`);
    assert.ok(refusals.every((id) => /^\d+$/.test(id)), `each time from where the page stands (Last-Event-ID): ${refusals.join(', ')}`);

    refuse = false;
    await liveState(page, 'Live', 20_000);
    await search(page, String(PET.fallback), 1);
    await changeInApi(api, PET.fallback, 13);
    await eventually(async () => assert.equal(quantityIn(await readRow(page, PET.fallback)), 13), 2_000);
    await page.unrouteAll({ behavior: 'ignoreErrors' });
  });

  await t.test('keyboard: Tab reaches search, filter, the sort buttons and Edit, each with a visible focus; Enter on Edit opens the editor', { timeout }, async (st) => {
    const { page } = await signedIn(st, api, api.keys.write);
    const isEdit = (f: Focused) => f.tag === 'button' && /^Edit pet -?\d+$/.test(f.name);
    const seen = await tabUntil(page, isEdit);
    const reached = {
      search: seen.find((f) => f.tag === 'input' && f.type === 'search'),
      filter: seen.find((f) => f.tag === 'select' && f.name.startsWith('Status')),
      ...Object.fromEntries(SORT_COLUMNS.map((c) => [c, seen.find((f) => f.tag === 'button' && f.name.startsWith(c))])),
      edit: seen.at(-1),
    };
    for (const [what, f] of Object.entries(reached)) {
      assert.ok(f, `Tab reaches ${what}: ${seen.map((s) => `${s.tag}[${s.name}]`).join(', ')}`);
      // The page's own ring (3 px, its focus colour), not the browser's default, which may be faint or none.
      assert.deepEqual([f.outlineStyle, f.outlineWidth, f.outlineColor], ['solid', '3px', 'rgb(191, 87, 0)'], `${what} shows its focus`);
    }
    const petId = BigInt(/-?\d+$/.exec(reached.edit!.name)![0]);
    await page.keyboard.press('Enter');
    const quantity = editor(page, petId).quantity;
    await quantity.waitFor();
    await eventually(async () => assert.ok(await quantity.evaluate((el) => el === (globalThis as unknown as DomWindow).document.activeElement), 'the focus is in the quantity field'));
    await page.keyboard.press('Escape');
    await quantity.waitFor({ state: 'detached' });
  });

  await t.test('accessibility: axe-core finds nothing serious or critical on the sign-in form, the table, the editor and the history panel', { timeout }, async (st) => {
    const petId = PET.a11y;
    await changeInApi(api, petId, 5, 'received');
    const { page } = await session(st);
    await page.goto(`${api.baseUrl}/dashboard`);
    await page.getByLabel('API key', { exact: true }).waitFor();
    const found = serious(await axeFindings(page), 'sign-in form');
    await signIn(page, 'not a key at all');
    await alertWith(page, 'not accepted').waitFor();
    found.push(...serious(await axeFindings(page), 'sign-in form with an alert'));
    await signIn(page, api.keys.write);
    await firstRows(page);
    found.push(...serious(await axeFindings(page), 'the table'));
    await search(page, String(petId), 1);
    await openEditor(page, petId);
    found.push(...serious(await axeFindings(page), 'the editor'));
    await page.keyboard.press('Escape');
    await editor(page, petId).quantity.waitFor({ state: 'detached' });
    await button(page, `History of pet ${petId}`).click();
    await page.getByRole('region', { name: `History of pet ${petId}`, exact: true }).locator('tr:has(td)').first().waitFor();
    found.push(...serious(await axeFindings(page), 'the history panel'));
    assert.deepEqual(found, []);
  });

  await t.test("the page's policy: / leads to /dashboard; every request to this origin, none failed or refused, no console error or policy violation", { timeout }, async (st) => {
    const petId = PET.policy;
    const { page, traffic } = await session(st);
    await page.addInitScript(() => {
      const violations: string[] = [];
      (globalThis as unknown as { cspViolations: string[] }).cspViolations = violations;
      (globalThis as unknown as { addEventListener(type: string, fn: (e: { violatedDirective: string; blockedURI: string }) => void): void }).addEventListener(
        'securitypolicyviolation',
        (e) => violations.push(`${e.violatedDirective} ${e.blockedURI}`),
      );
    });
    const origin = new URL(api.baseUrl).origin;
    const served = await page.goto(`${api.baseUrl}/`);
    assert.match(new URL(page.url()).pathname, /^\/dashboard\/?$/, '/ redirects to /dashboard');
    assert.equal(served?.status(), 200);
    const policy = (await served.allHeaders())['content-security-policy'] ?? '';
    const directives = policy.split(';').map((d) => d.trim());
    assert.ok(directives.includes("script-src 'self'"), policy);
    assert.ok(directives.includes("connect-src 'self'"), policy);

    await signIn(page, api.keys.write);
    await firstRows(page);
    await sortButton(page, 'Quantity').click();
    await statusFilter(page).selectOption({ label: 'sold' });
    await statusFilter(page).selectOption({ label: 'All statuses' });
    await search(page, String(petId), 1);
    await openEditor(page, petId);
    await editor(page, petId).quantity.fill('7');
    await button(page, 'Save').click();
    await savedAs(page, petId, 6, 7);
    await button(page, `History of pet ${petId}`).click();
    const panel = page.getByRole('region', { name: `History of pet ${petId}`, exact: true });
    await panel.locator('tr:has(td)').first().waitFor();
    await button(panel, 'Close history').click();

    const violations = await page.evaluate(() => (globalThis as unknown as { cspViolations: string[] }).cspViolations);
    assert.deepEqual(violations, [], 'policy violations');
    assert.deepEqual(
      traffic.requests.filter((url) => !url.startsWith('data:') && new URL(url).origin !== origin),
      [],
      'requests to another origin',
    );
    assert.deepEqual(traffic.failed, [], 'failed requests');
    assert.deepEqual(traffic.refused, [], 'answers of 400 or more');
    assert.deepEqual(traffic.consoleErrors, [], 'console errors');
  });

  await t.test('100,000 entries: the first rows, the last one by scrolling, a few hundred rows in the DOM at most; the measures', { timeout: 180_000 }, async (st) => {
    const big = await buildTestApp(st, { transport: 'http', backend });
    const items: InventoryItem[] = Array.from({ length: 99_999 }, (_, i) => ({ petId: BigInt(i + 1), quantity: (i * 7919) % 1000, status: PET_STATUSES[i % 3]! }));
    items.push({ petId: INT64_MAX, quantity: 1, status: 'available' });
    const seeded = performance.now();
    const outcome = await big.store.changes.importItems(importSource(items, { batch: 10_000 }), importPlan());
    assert.ok(outcome.applied);
    st.diagnostic(`seeded 100,000 entries in ${(performance.now() - seeded).toFixed(0)} ms`);

    const { page } = await signedIn(st, big, big.keys.write);
    await page.getByText('Showing 100,000 of 100,000').waitFor();
    assert.equal(await rowCount(page), 100_001);
    const firstRowsMs = await eventually(async () => {
      const [ms] = await measures(page, 'dashboard:first-rows');
      assert.ok(ms !== undefined, 'the first-rows measure');
      return ms;
    });
    assert.ok((await dataRows(page).count()) < 300, 'virtualized: only the rows in view and a few more');

    await scrollTable(page, 'end');
    const last = rowOf(page, INT64_MAX);
    await last.waitFor();
    assert.equal(await last.getAttribute('aria-rowindex'), '100001');
    assert.equal((await readRow(page, INT64_MAX)).cells[0], String(INT64_MAX));
    assert.ok((await dataRows(page).count()) < 300, 'virtualized at the end too');
    await screenshot(page, `dashboard-${backend}-100k`);
    await scrollTable(page, 0);
    await eventually(async () => assert.equal((await readRows(page))[0]?.rowIndex, 2));

    const figures: string[] = [`first rows ${firstRowsMs.toFixed(0)} ms`];
    for (const column of SORT_COLUMNS) {
      for (let i = 0; i < 2; i++) {
        const ms = await measured(page, 'dashboard:sort', () => sortButton(page, column).click());
        figures.push(`sort ${column} ${await columnHeader(page, column).getAttribute('aria-sort')} ${ms.toFixed(0)} ms`);
      }
    }
    for (const status of [...PET_STATUSES, 'All statuses']) {
      const ms = await measured(page, 'dashboard:filter', () => statusFilter(page).selectOption({ label: status }).then(() => undefined));
      figures.push(`filter ${status} ${ms.toFixed(0)} ms`);
    }
    for (const text of ['99', '12345', '']) {
      const ms = await measured(page, 'dashboard:filter', () => searchField(page).fill(text));
      figures.push(`search "${text}" ${ms.toFixed(0)} ms`);
    }
    st.diagnostic(`${backend}, 100,000 entries: ${figures.join('; ')}`);
    const names: MeasureName[] = ['dashboard:first-rows', 'dashboard:sort', 'dashboard:filter'];
    for (const name of names) assert.ok((await measures(page, name)).length > 0, name);
  });
}

