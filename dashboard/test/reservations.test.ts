import assert from 'node:assert/strict';
import { after, describe, test, type TestContext } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { buildTestApp, type TestApp } from '../../test/support/app.js';
import { BACKENDS, backendSkip } from '../../test/support/backends.js';
import { browserSkip, recordTraffic, startChromium, type Traffic } from '../../test/support/browser.js';
import { axeFindings, eventually, firstRows, quantityIn, readRow, signIn } from './dashboard-page.js';

/**
 * The dashboard and reservations in headless Chromium: each row shows what reservations hold of
 * its pet and what is left to sell; the Reservations panel, folded under the table, lists the
 * active ones to a key that may release them, and Release gives the stock back (the row follows by
 * the reservation's event); a release the service refuses says why. Open, the panel follows what is
 * made and ended elsewhere as the table does: by the events, or by the poll when the stream is refused.
 */

const skipBrowser = browserSkip('/dashboard');

let shared: Promise<Browser> | undefined;
after(async () => {
  if (shared) await (await shared).close();
});

async function signedIn(t: TestContext, api: TestApp, key: string, before?: (page: Page) => Promise<unknown>): Promise<{ page: Page; traffic: Traffic }> {
  shared ??= startChromium();
  const context = await (await shared).newContext({ locale: 'en-US', timezoneId: 'UTC' });
  t.after(() => context.close());
  const page = await context.newPage();
  page.setDefaultTimeout(20_000);
  const traffic = recordTraffic(context, page);
  await before?.(page);
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

/** The ids the panel lists, once it lists what `expected` says: a change made elsewhere shows without a click. */
async function panelShows(page: Page, expected: string[]): Promise<void> {
  const empty = page.getByText('No active reservations: nothing is held for a checkout.');
  await eventually(async () => {
    if (expected.length === 0) return assert.ok(await empty.isVisible(), 'no active reservations');
    assert.deepEqual((await reservationRows(page)).map((cells) => cells[0]), expected);
  });
}

/** Whether the page asked for the reservations' list (the panel's one read). */
function readsReservations(url: string): boolean {
  return new URL(url).pathname === '/v1/reservations';
}

function endIn(api: TestApp, id: string, how: 'commit' | 'release') {
  return api.request({ method: 'POST', url: `/v1/reservations/${id}/${how}`, key: api.keys.write });
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

      // The sale's event reads the list again: held back, so the Release button is still there when it comes, as it is to
      // someone who clicks as the sale is made.
      let letThrough = () => {};
      const gate = new Promise<void>((resolve) => (letThrough = resolve));
      let held = 0;
      await page.route((url) => readsReservations(url.href), async (route) => {
        held += 1;
        await gate;
        await route.continue();
      });
      assert.equal((await endIn(api, id, 'commit')).status, 200);
      await eventually(async () => assert.ok(held >= 1, "the sale's event asked for the list"));
      const refusal = page.getByRole('alert').filter({ hasText: `${id} could not be released: Reservation ${id} is committed, so it cannot be released; nothing changed.` });
      try {
        await page.getByRole('button', { name: `Release ${id}`, exact: true }).click();
        await refusal.waitFor();
      } finally {
        letThrough();
        await page.unrouteAll({ behavior: 'wait' });
      }
      await page.getByText('No active reservations: nothing is held for a checkout.').waitFor();
      assert.ok(await refusal.isVisible(), 'the lists read after the refusal leave its reason on screen');
      await quantityCell(page, 2, '3');
    });

    test('open, the panel follows reservations made and ended elsewhere, by their events; closed, it reads nothing', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PETS });
      const { page, traffic } = await signedIn(t, api, api.keys.write);
      await page.locator('.freshness').getByText('Live', { exact: true }).waitFor();
      const panel = page.getByText('Reservations', { exact: true });
      await panel.click();
      await panelShows(page, []);

      const first = await reserve(api, 1, 2, 'order-10');
      await panelShows(page, [first]);
      const second = await reserve(api, 2, 1, 'order-11');
      await panelShows(page, [second, first]);
      assert.equal((await endIn(api, first, 'commit')).status, 200);
      await panelShows(page, [second]);
      assert.equal((await endIn(api, second, 'release')).status, 200);
      await panelShows(page, []);

      await panel.click();
      const reads = traffic.requests.filter(readsReservations).length;
      const third = await reserve(api, 1, 1, 'order-12');
      await eventually(async () => assert.equal((await readRow(page, 1n)).cells[1], '8 1 held, 7 available'));
      assert.equal(traffic.requests.filter(readsReservations).length, reads, 'folded away, the panel reads nothing');
      await panel.click();
      await panelShows(page, [third]);
      assert.deepEqual(traffic.refused, []);
    });

    test('with the stream refused, the open panel follows by the poll, as the table does', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PETS });
      const { page } = await signedIn(t, api, api.keys.write, (p) =>
        p.route(`${api.baseUrl}/v1/events/stream`, (route) =>
          route.fulfill({
            status: 503,
            contentType: 'application/json',
            headers: { 'retry-after': '1' },
            body: JSON.stringify({ code: 'service_unavailable', message: 'Too many event streams (test)', status: 503 }),
          }),
        ),
      );
      await page.locator('.freshness').getByText('Not live', { exact: true }).waitFor();
      await page.getByText('Reservations', { exact: true }).click();
      await panelShows(page, []);

      const id = await reserve(api, 2, 3, 'order-13');
      await panelShows(page, [id]);
      assert.equal((await endIn(api, id, 'release')).status, 200);
      await panelShows(page, []);
      await page.unrouteAll({ behavior: 'ignoreErrors' });
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
