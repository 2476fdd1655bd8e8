import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Locator, Page } from 'playwright-core';

/**
 * The staff dashboard at /dashboard as its browser tests and the benchmark drive it: through the
 * accessible names of its UI contract (labels, roles, button names), never through its markup's
 * classes or structure, so a restyled page keeps its tests.
 *
 * Functions passed to page.evaluate run in the browser from their source text: they may use only
 * their arguments and the page's globals, and define no named function inside (tsx would wrap it in
 * a helper the page does not have).
 */

/** The columns that sort, by the names of their buttons. */
export const SORT_COLUMNS = ['Pet ID', 'Quantity', 'Status'] as const;
export type SortColumn = (typeof SORT_COLUMNS)[number];
export type SortDirection = 'ascending' | 'descending';

/** The performance.measure entries the app records. */
export type MeasureName = 'dashboard:first-rows' | 'dashboard:sort' | 'dashboard:filter';

/** The DOM as far as page functions read it: the project compiles with Node's types only, without the DOM library. */
export interface DomElement {
  readonly tagName: string;
  readonly className: string;
  readonly textContent: string | null;
  readonly children: ArrayLike<DomElement>;
  readonly parentElement: DomElement | null;
  readonly labels?: ArrayLike<DomElement> | null;
  readonly type?: string;
  scrollTop: number;
  readonly scrollHeight: number;
  readonly clientHeight: number;
  readonly scrollWidth: number;
  readonly clientWidth: number;
  getAttribute(name: string): string | null;
  querySelectorAll(selectors: string): ArrayLike<DomElement>;
  readonly nextElementSibling: DomElement | null;
  closest(selectors: string): DomElement | null;
  getBoundingClientRect(): { left: number; top: number; right: number; bottom: number };
}

interface DomStorage {
  readonly length: number;
  key(index: number): string | null;
  getItem(key: string): string | null;
}

export interface DomWindow {
  document: { activeElement: DomElement | null; scrollingElement: DomElement | null; getElementById(id: string): DomElement | null };
  getComputedStyle(element: DomElement): { overflowX: string; overflowY: string; outlineStyle: string; outlineWidth: string; outlineColor: string };
  readonly innerWidth: number;
  readonly innerHeight: number;
  sessionStorage: DomStorage;
  localStorage: DomStorage;
}

export function inventoryTable(page: Page): Locator {
  return page.getByRole('table', { name: 'Inventory', exact: true });
}

/** The rows in the DOM (virtualized: the visible ones and a few more), each with its exact petId. */
export function dataRows(page: Page): Locator {
  return inventoryTable(page).locator('tr[data-pet-id]');
}

export function rowOf(page: Page, petId: bigint | string): Locator {
  return inventoryTable(page).locator(`tr[data-pet-id="${petId}"]`);
}

export function columnHeader(page: Page, column: SortColumn | 'Actions'): Locator {
  return inventoryTable(page).getByRole('columnheader', { name: column });
}

export function sortButton(page: Page, column: SortColumn): Locator {
  // A sort arrow after the name is allowed; another column's name is not.
  return columnHeader(page, column).getByRole('button', { name: new RegExp(`^${column}\\b`) });
}

export function statusFilter(page: Page): Locator {
  return page.getByRole('combobox', { name: 'Status', exact: true });
}

export function searchField(page: Page): Locator {
  return page.getByRole('searchbox', { name: 'Search pet ID', exact: true });
}

/** The alert region holding `text` (there may be several alert regions, some empty). */
export function alertWith(page: Page, text: string | RegExp): Locator {
  return page.getByRole('alert').filter({ hasText: text });
}

export function statusWith(page: Page, text: string | RegExp): Locator {
  return page.getByRole('status').filter({ hasText: text });
}

export function button(scope: Page | Locator, name: string): Locator {
  return scope.getByRole('button', { name, exact: true });
}

/** The editor's fields of one row, by their labels. */
export function editor(page: Page, petId: bigint | string) {
  return {
    quantity: page.getByLabel(`Quantity of pet ${petId}`, { exact: true }),
    delta: page.getByLabel(`Add or remove for pet ${petId}`, { exact: true }),
    reason: page.getByLabel(`Reason for pet ${petId}`, { exact: true }),
  };
}

/** Fills the key in and presses "Sign in"; the page is at /dashboard, signed out. */
export async function signIn(page: Page, key: string): Promise<void> {
  await page.getByLabel('API key', { exact: true }).fill(key);
  await button(page, 'Sign in').click();
}

/** Resolves once the first row is in the table. */
export async function firstRows(page: Page, timeout?: number): Promise<void> {
  await dataRows(page).first().waitFor({ state: 'visible', ...(timeout === undefined ? {} : { timeout }) });
}

/** One row as the table shows it: the text of each cell in column order (Pet ID, Quantity, Status, Actions). */
export interface RowView {
  rowIndex: number;
  petId: string;
  cells: string[];
  classes: string[];
}

/** The rows in the DOM, in document order. */
export async function readRows(page: Page): Promise<RowView[]> {
  const rows = await dataRows(page).evaluateAll((trs: DomElement[]) =>
    trs.map((tr) => ({
      rowIndex: tr.getAttribute('aria-rowindex'),
      petId: tr.getAttribute('data-pet-id') ?? '',
      cells: Array.from(tr.children).map((cell) => (cell.textContent ?? '').replace(/\s+/g, ' ').trim()),
      classes: tr.className.split(/\s+/).filter(Boolean),
    })),
  );
  return rows.map((r) => ({ ...r, rowIndex: Number(r.rowIndex) }));
}

export async function readRow(page: Page, petId: bigint | string): Promise<RowView> {
  const [row] = (await readRows(page)).filter((r) => r.petId === String(petId));
  if (!row) throw new Error(`pet ${petId} has no row in the DOM`);
  return row;
}

/** The number a Quantity cell shows ("1,234", "0 Out of stock", or "12 3 held, 9 available" while reservations hold some). */
export function quantityIn(row: RowView): number {
  const digits = (row.cells[1] ?? '').replace(/out of stock/i, '').replace(/[\d,]+ held, [\d,]+ available$/, '').replace(/[^0-9]/g, '');
  if (digits === '') throw new Error(`pet ${row.petId}: no quantity in "${row.cells[1]}"`);
  return Number(digits);
}

export async function rowCount(page: Page): Promise<number> {
  return Number(await inventoryTable(page).getAttribute('aria-rowcount'));
}

/** The "Stock counts" list as term → value, e.g. { Available: '12,345', ..., Total: '20,000' }. */
export async function readCounts(page: Page): Promise<Record<string, string>> {
  return page.locator('[aria-label="Stock counts"]').evaluate((list: DomElement) => {
    const counts: Record<string, string> = {};
    let term = '';
    for (const item of Array.from(list.querySelectorAll('dt, dd'))) {
      const text = (item.textContent ?? '').replace(/\s+/g, ' ').trim();
      if (item.tagName === 'DT') term = text;
      else counts[term] = text;
    }
    return counts;
  });
}

/**
 * The scroll offset of what scrolls the table (its nearest scrollable ancestor, or the page), after
 * moving it to `to` px or to its end when given.
 */
export async function scrollTable(page: Page, to?: number | 'end'): Promise<number> {
  return inventoryTable(page).evaluate(
    (table: DomElement, target: number | 'end' | null) => {
      const w = globalThis as unknown as DomWindow;
      let scroller: DomElement | null = null;
      for (let el: DomElement | null = table; el && !scroller; el = el.parentElement) {
        const overflow = w.getComputedStyle(el).overflowY;
        if ((overflow === 'auto' || overflow === 'scroll') && el.scrollHeight > el.clientHeight) scroller = el;
      }
      scroller ??= w.document.scrollingElement;
      if (!scroller) return 0;
      if (target !== null) scroller.scrollTop = target === 'end' ? scroller.scrollHeight : target;
      return scroller.scrollTop;
    },
    to ?? null,
  );
}

/** The durations of every measure of this name so far, oldest first. */
export async function measures(page: Page, name: MeasureName): Promise<number[]> {
  return page.evaluate(
    (n) =>
      performance
        .getEntriesByType('measure')
        .filter((m) => m.name === n)
        .map((m) => m.duration),
    name,
  );
}

/** Runs `action` and resolves to the duration of the measure it made the app record. */
export async function measured(page: Page, name: MeasureName, action: () => Promise<void>, timeoutMs = 30_000): Promise<number> {
  const before = (await measures(page, name)).length;
  await action();
  return eventually(async () => {
    const after = await measures(page, name);
    if (after.length <= before) throw new Error(`no new ${name} measure (still ${before})`);
    return after.at(-1)!;
  }, timeoutMs);
}

/** What has the keyboard focus: its tag, type, accessible name as far as a test needs it, and its outline. */
export interface Focused {
  tag: string;
  type: string | null;
  name: string;
  outlineStyle: string;
  outlineWidth: string;
  outlineColor: string;
}

export async function focused(page: Page): Promise<Focused | null> {
  return page.evaluate(() => {
    const w = globalThis as unknown as DomWindow;
    const el = w.document.activeElement;
    if (!el) return null;
    const label = el.labels && el.labels.length > 0 ? el.labels[0]!.textContent : null;
    const name = el.getAttribute('aria-label') ?? label ?? el.textContent ?? '';
    return { tag: el.tagName.toLowerCase(), type: el.getAttribute('type'), name: name.replace(/\s+/g, ' ').trim(), ...(({ outlineStyle, outlineWidth, outlineColor }) => ({ outlineStyle, outlineWidth, outlineColor }))(w.getComputedStyle(el)) };
  });
}

/** A box on the screen, in CSS pixels from the viewport's top left. */
export interface Box {
  left: number;
  top: number;
  right: number;
  bottom: number;
}

/** The message that describes a field (its aria-describedby), where it is, and what could hide it. */
export interface FieldMessage {
  /** The field's aria-invalid. */
  invalid: string | null;
  text: string;
  /** The live region the message is in: its role (alert, status) or aria-live; null when none. */
  live: string | null;
  box: Box;
  field: Box;
  /** The field's row, the row after it (null when it is the last) and the table. */
  row: Box;
  nextRow: Box | null;
  table: Box;
  viewport: { width: number; height: number };
  /** The ancestors whose overflow clips (not visible) and whose box does not hold all of the message. */
  clippedBy: string[];
  /** Its content is wider or taller than its box (cut off, or scrolled within it). */
  overflows: boolean;
}

/**
 * The message a field is described by (the first id of its aria-describedby), as a reader sees it:
 * its box against the field's, its row's, its table's, the viewport's and every clipping
 * ancestor's. Null when the field is described by nothing.
 */
export async function fieldMessage(field: Locator): Promise<FieldMessage | null> {
  return field.evaluate((input: DomElement) => {
    const w = globalThis as unknown as DomWindow;
    const ids = (input.getAttribute('aria-describedby') ?? '').split(/\s+/).filter(Boolean);
    const message = ids.length > 0 ? w.document.getElementById(ids[0]!) : null;
    if (!message) return null;
    const [box, fieldBox, row, table] = [message, input, input.closest('tr'), input.closest('table')].map((el): Box => {
      const r = el ? el.getBoundingClientRect() : { left: NaN, top: NaN, right: NaN, bottom: NaN };
      return { left: r.left, top: r.top, right: r.right, bottom: r.bottom };
    }) as [Box, Box, Box, Box];
    const clippedBy: string[] = [];
    for (let el = message.parentElement; el; el = el.parentElement) {
      const style = w.getComputedStyle(el);
      if (style.overflowX === 'visible' && style.overflowY === 'visible') continue;
      const r = el.getBoundingClientRect();
      if (box.left < r.left || box.right > r.right || box.top < r.top || box.bottom > r.bottom) clippedBy.push(`${el.tagName.toLowerCase()}.${el.className} ${JSON.stringify(r)}`);
    }
    const next = input.closest('tr')?.nextElementSibling ?? null;
    const nextBox = next ? next.getBoundingClientRect() : null;
    const region = message.closest('[role="alert"], [role="status"], [aria-live]');
    return {
      invalid: input.getAttribute('aria-invalid'),
      text: (message.textContent ?? '').replace(/\s+/g, ' ').trim(),
      live: region ? (region.getAttribute('role') ?? region.getAttribute('aria-live')) : null,
      box,
      field: fieldBox,
      row,
      nextRow: nextBox ? { left: nextBox.left, top: nextBox.top, right: nextBox.right, bottom: nextBox.bottom } : null,
      table,
      viewport: { width: w.innerWidth, height: w.innerHeight },
      clippedBy,
      overflows: message.scrollWidth > message.clientWidth || message.scrollHeight > message.clientHeight,
    };
  });
}

/** Every value in the page's sessionStorage and localStorage. */
export async function storedValues(page: Page): Promise<{ session: string[]; local: string[] }> {
  return page.evaluate(() => {
    const w = globalThis as unknown as DomWindow;
    const session: string[] = [];
    const local: string[] = [];
    for (let i = 0; i < w.sessionStorage.length; i++) session.push(w.sessionStorage.getItem(w.sessionStorage.key(i) ?? '') ?? '');
    for (let i = 0; i < w.localStorage.length; i++) local.push(w.localStorage.getItem(w.localStorage.key(i) ?? '') ?? '');
    return { session, local };
  });
}

/** One axe-core finding, short enough to read in a failed assertion. */
export interface AxeFinding {
  rule: string;
  impact: string | null;
  help: string;
  targets: string[];
}

interface AxeRunner {
  run(options: { resultTypes: string[] }): Promise<{ violations: { id: string; impact?: string | null; help: string; nodes: { target: unknown[] }[] }[] }>;
}

let axeSource: string | undefined;

/**
 * axe-core's findings on the page as it is. Its source is evaluated through the browser's debugging
 * protocol, which the page's policy does not govern (a script tag added to the page would be refused).
 */
export async function axeFindings(page: Page): Promise<AxeFinding[]> {
  axeSource ??= readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
  await page.evaluate(axeSource);
  return page.evaluate(async () => {
    const { axe } = globalThis as unknown as { axe: AxeRunner };
    const { violations } = await axe.run({ resultTypes: ['violations'] });
    return violations.map((v) => ({ rule: v.id, impact: v.impact ?? null, help: v.help, targets: v.nodes.map((n) => JSON.stringify(n.target)) }));
  });
}

/**
 * Retries `check` (an assertion, or anything that throws until the page is as expected) every 100 ms
 * until it passes, then resolves to its value; past the time limit, rethrows its last error.
 */
export async function eventually<T>(check: () => Promise<T>, timeoutMs = 15_000): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (performance.now() > deadline) throw err;
    }
    await sleep(100);
  }
}
