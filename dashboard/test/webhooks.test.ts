import assert from 'node:assert/strict';
import { after, describe, test, type TestContext } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { DISABLED_BY_OPERATOR } from '../../src/domain/webhook.js';
import { buildTestApp, makeKey, type TestApp } from '../../test/support/app.js';
import { BACKENDS, backendSkip } from '../../test/support/backends.js';
import { browserSkip, recordTraffic, startChromium, type Traffic } from '../../test/support/browser.js';
import { axeFindings, firstRows, signIn } from './dashboard-page.js';

/**
 * The dashboard's Webhooks panel in headless Chromium: folded under the table, it shows each
 * endpoint's URL, state, requests in flight, delivered-up-to seq, backlog and last failure to a key with
 * webhooks:manage (read when opened, never a secret), and a note to any other key.
 */

const skipBrowser = browserSkip('/dashboard');
const SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;

let shared: Promise<Browser> | undefined;
after(async () => {
  if (shared) await (await shared).close();
});

/** Opens /dashboard in a fresh context and signs in with `key`; resolves once the first rows show. */
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

/** Each row of the endpoints table: its cells' text. */
async function endpointRows(page: Page): Promise<string[][]> {
  const table = page.getByRole('table', { name: 'Webhook endpoints', exact: true });
  await table.waitFor();
  const rows = table.locator('tbody tr');
  const out: string[][] = [];
  for (const row of await rows.all()) out.push((await row.locator('td').allTextContents()).map((c) => c.replace(/\s+/g, ' ').trim()));
  return out;
}

for (const backend of BACKENDS) {
  describe(`the dashboard's Webhooks panel on ${backend}`, { skip: skipBrowser || (await backendSkip(backend)) }, () => {
    test('a key with webhooks:manage sees each endpoint\'s state when it opens the panel, and no secret', async (t) => {
      // The panel shows what the store holds; a dispatcher would act on the new endpoints at once (their hosts do not
      // resolve) and change it while the page loads.
      const api = await buildTestApp(t, { backend, transport: 'http', items: [{ petId: 1n, quantity: 1, status: 'available' }], delivering: false });
      await api.store.webhookEndpoints.addEndpoint({ id: 'whk_till', url: 'https://till.example/hook', description: null, secret: SECRET, createdAt: new Date(Date.now() - 1000) });
      await api.store.webhookEndpoints.addEndpoint({ id: 'whk_shop', url: 'https://shop.example/hook', description: null, secret: SECRET, createdAt: new Date() });
      await api.store.webhookEndpoints.disableEndpoint('whk_shop', DISABLED_BY_OPERATOR);
      const head = await api.store.events.head();
      const change = await api.request({ method: 'PATCH', url: '/v1/inventory/1', key: api.keys.write, body: { quantity: 2 } });
      assert.equal(change.status, 200);
      const key = await makeKey(api.store, api.config.environment, ['inventory:read', 'webhooks:manage']);

      const { page, traffic } = await signedIn(t, api, key);
      assert.ok(!traffic.requests.some((url) => url.endsWith('/v1/webhooks')), 'read only when opened');
      await page.getByText('Webhooks', { exact: true }).click();
      assert.deepEqual(await endpointRows(page), [
        ['https://till.example/hook', 'Enabled', 'up to 16', `seq ${head}`, '1', '—'],
        ['https://shop.example/hook', 'Disabled: by an operator', 'up to 16', `seq ${head}`, '1', '—'],
      ]);
      assert.ok(!(await page.content()).includes('whsec_'), 'no secret on the page');
      assert.deepEqual(traffic.refused, []);
      const serious = (await axeFindings(page)).filter((f) => f.impact === 'serious' || f.impact === 'critical');
      assert.deepEqual(serious, [], 'axe-core: no serious or critical finding with the panel open');
    });

    test('another key sees a note saying a key with webhooks:manage shows them, and asks for nothing', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: [{ petId: 1n, quantity: 1, status: 'available' }] });
      await api.store.webhookEndpoints.addEndpoint({ id: 'whk_till', url: 'https://till.example/hook', description: null, secret: SECRET, createdAt: new Date(Date.now() - 1000) });
      const { page, traffic } = await signedIn(t, api, api.keys.read);
      await page.getByText('Webhooks', { exact: true }).click();
      await page.getByText('A key with the scope webhooks:manage shows the webhook endpoints here.').waitFor();
      assert.equal(await page.getByRole('table', { name: 'Webhook endpoints' }).count(), 0);
      assert.ok(!traffic.requests.some((url) => url.endsWith('/v1/webhooks')), 'no request it would be refused');
      assert.deepEqual(traffic.refused, []);
    });
  });
}
