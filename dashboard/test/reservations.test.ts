import assert from 'node:assert/strict';
import { after, describe, test, type TestContext } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { buildTestApp, type TestApp } from '../../test/support/app.js';
import { BACKENDS, backendSkip } from '../../test/support/backends.js';
import { browserSkip, recordTraffic, startChromium, type Traffic } from '../../test/support/browser.js';
import { axeFindings, firstRows, quantityIn, readRow, signIn } from './dashboard-page.js';

/**
 * The dashboard and reservations in headless Chromium: each row shows what reservations hold of
 * its pet and what is left to sell; the Reservations panel, folded under the table, lists the
 * active ones to a key that may release them, and Release gives the stock back (the row follows by
 * the reservation's event); a release the service refuses says why.
 */

const skipBrowser = browserSkip('/dashboard');

let shared: Promise<Browser> | undefined;
after(async () => {
  if (shared) await (await shared).close();
});

async function signedIn(t: TestContext, api: TestApp, key: string): Promise<{ page: Page; traffic: Traffic }> {
  shared ??= startChromium();
  const context = await (await shared).newContext({ locale: 'en-US', timezoneId: 'UTC' });
  t.after(() => context.close());
  const page = await context.newPage();
  page.setDefaultTimeout(20_000);
  const traffic = recordTraffic(context, page);
  assert.equal((await page.goto(`${api.baseUrl}/dashboard`))?.status(), 200);
  await signIn(page, key);
  await firstRows(page);
  return { page, traffic };
}

async function reserve(api: TestApp, petId: number, quantity: number, reference: string): Promise<string> {
  const made = await api.request({ method: 'POST', url: '/v1/reservations', key: api.keys.write, body: { items: [{ petId, quantity }], reference } });
  assert.equal(made.status, 201);
  return made.json<{ id: string }>().id;
}

/** Each row of the active reservations' table: its cells' text. */
async function reservationRows(page: Page): Promise<string[][]> {
  const table = page.getByRole('table', { name: 'Active reservations', exact: true });
  await table.waitFor();
  const out: string[][] = [];
  for (const row of await table.locator('tbody tr').all()) out.push((await row.locator('td').allTextContents()).map((c) => c.replace(/\s+/g, ' ').trim()));
  return out;
}

/** Waits until pet `petId`'s Quantity cell shows `text`, as the live stream brings it; the deadline only ends a wait that would never succeed. */
async function quantityCell(page: Page, petId: number, text: string): Promise<void> {
  await page.locator(`tr[data-pet-id="${petId}"] td.quantity`).filter({ hasText: new RegExp(`^${text}$`) }).waitFor();
}

const PETS = [
  { petId: 1n, quantity: 10, status: 'available' as const },
  { petId: 2n, quantity: 5, status: 'available' as const },
];

for (const backend of BACKENDS) {
  describe(`the dashboard's reservations on ${backend}`, { skip: skipBrowser || (await backendSkip(backend)) }, () => {
    test('a row shows held and available; the panel lists the active reservation and Release gives the stock back', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PETS });
      const id = await reserve(api, 1, 3, 'order-7');
      const { page, traffic } = await signedIn(t, api, api.keys.write);

      const row = await readRow(page, 1n);
      assert.equal(row.cells[1], '10 3 held, 7 available');
      assert.equal(quantityIn(row), 10, 'the count is still what the cell shows first');
      assert.equal((await readRow(page, 2n)).cells[1], '5', 'nothing held: the count alone');

      assert.ok(!traffic.requests.some((url) => url.includes('/v1/reservations')), 'read only when opened');
      await page.getByText('Reservations', { exact: true }).click();
      const rows = await reservationRows(page);
      assert.equal(rows.length, 1);
      assert.deepEqual([rows[0]![0], rows[0]![1], rows[0]![2], rows[0]![4]], [id, '3 of pet 1', 'order-7', 'Release']);
      const serious = (await axeFindings(page)).filter((f) => f.impact === 'serious' || f.impact === 'critical');
      assert.deepEqual(serious, [], 'axe-core: no serious or critical finding with the panel open');

      await page.getByRole('button', { name: `Release ${id}`, exact: true }).click();
      await page.getByText(`Released ${id}: 3 of pet 1 available again.`).waitFor();
      await page.getByText('No active reservations: nothing is held for a checkout.').waitFor();
      // The reservation's event reads the list again: the row loses its held part.
      await quantityCell(page, 1, '10');
      const stored = await api.store.reservations.get(id);
      assert.equal(stored?.status, 'released');
      assert.deepEqual(traffic.refused, []);
    });

    test('a release the service refuses (committed meanwhile) shows its reason, and the list is read again', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PETS });
      const id = await reserve(api, 2, 2, 'order-8');
      const { page } = await signedIn(t, api, api.keys.write);
      await page.getByText('Reservations', { exact: true }).click();
      assert.equal((await reservationRows(page)).length, 1);

      const sold = await api.request({ method: 'POST', url: `/v1/reservations/${id}/commit`, key: api.keys.write });
      assert.equal(sold.status, 200);
      await page.getByRole('button', { name: `Release ${id}`, exact: true }).click();
      await page.getByRole('alert').filter({ hasText: `${id} could not be released: Reservation ${id} is committed, so it cannot be released; nothing changed.` }).waitFor();
      await page.getByText('No active reservations: nothing is held for a checkout.').waitFor();
      await quantityCell(page, 2, '3');
    });

    test('a read-only key sees a note saying which key shows them, and asks for nothing', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PETS });
      await reserve(api, 1, 1, 'order-9');
      const { page, traffic } = await signedIn(t, api, api.keys.read);
      await page.getByText('Reservations', { exact: true }).click();
      await page.getByText('A key with the scope reservations:write or inventory:write shows the active reservations here.').waitFor();
      assert.ok(!traffic.requests.some((url) => url.includes('/v1/reservations')));
      assert.equal((await readRow(page, 1n)).cells[1], '10 1 held, 9 available', 'what is held shows to every key');
    });
  });
}
