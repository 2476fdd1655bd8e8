import assert from 'node:assert/strict';
import { mkdir, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, test } from 'node:test';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { ERROR_CATALOGUE, ERROR_CODES } from '../../src/errors.js';
import { listInventory } from '../../src/operations/list-inventory.js';
import { updateInventory } from '../../src/operations/update-inventory.js';
import { JSON_CONTENT_SECURITY_POLICY, SECURITY_HEADERS } from '../../src/pipeline/pipeline.js';
import { BACKENDS, backendSkip } from '../support/backends.js';
import { FIRST_VIEW_ID } from '../../src/docs-page/first-view.js';
import { ARTIFACTS, browserSkip, launchChromium, recordTraffic } from '../support/browser.js';
import { requestBytes } from '../support/raw-http.js';
import { assertError, buildTestApp, TRANSPORTS } from '../support/app.js';

/** The docs page at /docs: its answers and headers, then the page itself in headless Chromium on each backend. */

const PAGE_POLICY_PARTS = ["default-src 'none'", "script-src 'self'", "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'"];

const browserSkipReason = browserSkip('/docs');

/** The files the page loads: its style sheet, its start script and Scalar's bundle (which the start script loads, named by data-scalar). */
function pageFiles(html: string): { style: string; start: string; scalar: string } {
  const styles = [...html.matchAll(/<link rel="stylesheet" href="([^"]+)">/g)].map((m) => m[1]!);
  const scripts = [...html.matchAll(/<script src="([^"]+)" data-scalar="([^"]+)"><\/script>/g)];
  assert.equal(styles.length, 1, 'one style sheet');
  assert.equal(scripts.length, 1, 'one script tag');
  return { style: styles[0]!, start: scripts[0]![1]!, scalar: scripts[0]![2]! };
}

/** A name with its content hash replaced, to compare names across builds. */
function unhashed(path: string): string {
  return path.replace(/-[0-9a-f]{16}\.(js|css)$/, '-HASH.$1');
}

/** Scalar's bundle as the npm package holds it. */
async function scalarBundleFile(): Promise<Buffer> {
  const plugin = createRequire(import.meta.url).resolve('@scalar/fastify-api-reference');
  return readFile(join(dirname(plugin), 'js', 'standalone.js'));
}

for (const transport of TRANSPORTS) {
  describe(`/docs over ${transport}`, () => {
    test('GET /docs and /docs/ need no key: 200 HTML with a policy of its own, revalidated by ETag (304)', async (t) => {
      const api = await buildTestApp(t, { transport });
      for (const url of ['/docs', '/docs/']) {
        const res = await requestBytes(api, transport, 'GET', url);
        assert.equal(res.status, 200, url);
        assert.equal(res.headers['content-type'], 'text/html; charset=utf-8');
        assert.equal(res.headers['cache-control'], 'no-cache');
        const policy = String(res.headers['content-security-policy']);
        for (const part of PAGE_POLICY_PARTS) assert.ok(policy.split('; ').includes(part), `${part} in ${policy}`);
        // Nothing inline runs: script-src has no 'unsafe-inline', and the page holds no inline script.
        assert.doesNotMatch(policy, /script-src[^;]*unsafe/);
        assert.match(policy, /(^|; )connect-src 'self'(;|$)/, 'the default servers are relative: this origin only');
        const html = res.body.toString();
        assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)/, 'no inline script');
        assert.doesNotMatch(html, /https?:\/\//, 'nothing from another host');
        const files = pageFiles(html);
        assert.deepEqual([files.style, files.start, files.scalar].map(unhashed), ['/docs/assets/docs-HASH.css', '/docs/assets/docs-HASH.js', '/docs/assets/scalar-HASH.js']);
        // The first view, before the script: every operation as a heading, the badge, the int64 warning, the error table.
        const view = html.slice(0, html.indexOf('<script'));
        for (const summary of [listInventory.summary, updateInventory.summary]) assert.ok(view.includes(`<h3>${summary}</h3>`), summary);
        assert.match(view, /<p class="docs-badge">Experimental<\/p>\n<h3>Update stock level<\/h3>/);
        assert.match(view, /2\^53/);
        assert.ok(view.includes('send &#34;Authorization: Bearer &#60;key&#62;&#34;.'), 'the <key> in the error table is escaped text');
        for (const [name, value] of SECURITY_HEADERS) assert.equal(res.headers[name], value, name);
        assert.equal(res.headers['x-content-type-options'], 'nosniff');
        assert.ok(res.headers['x-request-id']);
        const etag = String(res.headers.etag);
        assert.match(etag, /^"[0-9a-f]{16}"$/);
        const again = await requestBytes(api, transport, 'GET', url, { 'if-none-match': etag });
        assert.equal(again.status, 304);
        assert.equal(again.headers.etag, etag);
        assert.equal(again.headers['content-security-policy'], policy, 'the 304 keeps the page policy (a browser applies it to its cached page)');
        assert.equal(again.body.length, 0);
      }
    });

    test('the assets: content-hashed names, immutable for a year, br or gzip by Accept-Encoding, 304 on If-None-Match', async (t) => {
      const api = await buildTestApp(t, { transport });
      const { style, start, scalar } = pageFiles((await requestBytes(api, transport, 'GET', '/docs')).body.toString());
      const bundle = await scalarBundleFile();
      for (const [encoding, decode] of [
        ['br', brotliDecompressSync],
        ['gzip', gunzipSync],
        ['identity', (b: Buffer) => b],
      ] as const) {
        const res = await requestBytes(api, transport, 'GET', scalar, { 'accept-encoding': encoding === 'identity' ? 'identity' : `${encoding}, identity;q=0.5` });
        assert.equal(res.status, 200, encoding);
        assert.equal(res.headers['content-type'], 'text/javascript; charset=utf-8');
        assert.equal(res.headers['cache-control'], 'public, max-age=31536000, immutable');
        assert.equal(res.headers.vary, 'Accept-Encoding');
        assert.equal(res.headers['content-encoding'], encoding === 'identity' ? undefined : encoding);
        assert.ok(decode(res.body).equals(bundle), `${encoding}: the package's bundle, byte for byte`);
        if (encoding !== 'identity') assert.ok(res.body.length < bundle.length / 3, `${encoding}: ${res.body.length} bytes`);
        const etag = String(res.headers.etag);
        assert.match(etag, encoding === 'identity' ? /^"[0-9a-f]{16}"$/ : new RegExp(`^"[0-9a-f]{16}-${encoding}"$`));
        assert.ok(scalar.includes(etag.slice(1, 17)), 'the name holds the content hash');
        const cached = await requestBytes(api, transport, 'GET', scalar, { 'accept-encoding': encoding, 'if-none-match': etag });
        assert.equal(cached.status, 304, encoding);
        assert.equal(cached.headers.etag, etag);
        assert.equal(cached.headers['cache-control'], 'public, max-age=31536000, immutable');
        assert.equal(cached.body.length, 0);
      }
      // The style sheet and the start script, immutable too; the script names no host and starts Scalar with nothing that calls out.
      const sheet = await requestBytes(api, transport, 'GET', style, { 'accept-encoding': 'identity' });
      assert.equal(sheet.status, 200);
      assert.equal(sheet.headers['content-type'], 'text/css; charset=utf-8');
      assert.equal(sheet.headers['cache-control'], 'public, max-age=31536000, immutable');
      const res = await requestBytes(api, transport, 'GET', start, { 'accept-encoding': 'identity' });
      assert.equal(res.status, 200);
      assert.equal(res.headers['content-type'], 'text/javascript; charset=utf-8');
      assert.equal(res.headers['cache-control'], 'public, max-age=31536000, immutable');
      const script = res.body.toString();
      for (const setting of ["proxyUrl: ''", 'withDefaultFonts: false', 'telemetry: false', 'agent: { disabled: true }', "showDeveloperTools: 'never'"]) {
        assert.ok(script.includes(setting), setting);
      }
      assert.doesNotMatch(script, /https?:\/\//);
    });

    test('anything else under /docs is 404 with the Error body, without a key; other methods and /v1 still need one', async (t) => {
      const api = await buildTestApp(t, { transport });
      const { scalar } = pageFiles((await requestBytes(api, transport, 'GET', '/docs')).body.toString());
      const stale = scalar.replace(/-[0-9a-f]{16}\.js$/, '-0000000000000000.js');
      for (const url of ['/docs/nothing.js', '/docs/assets/', stale, '/docs/assets/scalar.js', '/docs/assets/docs.js?x=1']) {
        const res = await api.request({ method: 'GET', url });
        assertError(res, 404, 'not_found');
        assert.equal(res.headers['content-security-policy'], JSON_CONTENT_SECURITY_POLICY, url);
        assert.equal(res.headers['cache-control'], 'no-store', url);
      }
      assertError(await api.request({ method: 'POST', url: '/docs', body: {} }), 401, 'unauthorized');
      assertError(await api.request({ method: 'DELETE', url: '/docs/assets/x.js' }), 401, 'unauthorized');
      assertError(await api.request({ method: 'POST', url: '/docs', key: api.keys.read, body: {} }), 405, 'method_not_allowed');
      assertError(await api.request({ method: 'GET', url: '/v1/inventory' }), 401, 'unauthorized');
      assertError(await api.request({ method: 'GET', url: '/v1/docs' }), 401, 'unauthorized');
      // The JSON answers keep their own policy.
      const document = await api.request({ method: 'GET', url: '/v1/openapi.json' });
      assert.equal(document.headers['content-security-policy'], JSON_CONTENT_SECURITY_POLICY);
    });
  });
}

test("the page's policy lets it call the document's servers, and only those", async (t) => {
  const api = await buildTestApp(t, { config: { PUBLIC_BASE_URL: 'https://inventory.example/v1', STAGING_BASE_URL: 'https://staging.inventory.example:8443/v1' } });
  const res = await requestBytes(api, 'inject', 'GET', '/docs');
  const connect = String(res.headers['content-security-policy']).split('; ').find((part) => part.startsWith('connect-src '));
  assert.equal(connect, "connect-src 'self' https://inventory.example https://staging.inventory.example:8443");
});

test('the first render, before any script runs: both operations, the experimental badge, int64, the error codes with "Bearer <key>"', { skip: browserSkipReason, timeout: 60_000 }, async (t) => {
  // The browser first: after hooks run in order, so it closes before the app, whose close would wait for its connections.
  const context = await launchChromium(t);
  const api = await buildTestApp(t, { transport: 'http' });
  const page = context.pages()[0] ?? (await context.newPage());
  const traffic = recordTraffic(context, page);
  const origin = new URL(api.baseUrl).origin;
  // No script runs, so what shows is the page as served with its style sheet: its first render, whatever the timing.
  await (await context.newCDPSession(page)).send('Emulation.setScriptExecutionDisabled', { value: true });
  const loaded = await page.goto(`${api.baseUrl}/docs`);
  assert.equal(loaded?.status(), 200);

  const view = page.locator(`#${FIRST_VIEW_ID}`);
  const heading = (summary: string) => view.locator('h3', { hasText: summary });
  for (const summary of [listInventory.summary, updateInventory.summary]) assert.ok(await heading(summary).isVisible(), `${summary} is visible`);
  const operation = (summary: string) => view.locator('section', { has: page.locator('h3', { hasText: summary }) }).last();
  const badge = operation(updateInventory.summary).getByText(/^experimental$/i);
  assert.ok(await badge.isVisible(), 'the experimental badge is visible');
  const [badgeBox, titleBox] = [await badge.boundingBox(), await heading(updateInventory.summary).boundingBox()];
  assert.ok(badgeBox && titleBox && titleBox.y - badgeBox.y > 0 && titleBox.y - badgeBox.y < 80, `badge ${JSON.stringify(badgeBox)} right above title ${JSON.stringify(titleBox)}`);
  assert.equal(await operation(listInventory.summary).getByText(/^experimental$/i).count(), 0, 'listInventory is not experimental');
  assert.ok(await operation(updateInventory.summary).getByText('int64').first().isVisible(), 'the petId parameter is an int64');

  const text = await view.innerText();
  assert.match(text, /petIds are int64/);
  assert.match(text, /2\^53/);
  const codeTable = view.locator('table', { hasText: 'precondition_failed' }).first();
  assert.ok(await codeTable.isVisible(), 'a table of error codes');
  const tableText = await codeTable.innerText();
  for (const code of ERROR_CODES) assert.ok(tableText.includes(`${code}\t${ERROR_CATALOGUE[code].status}\t${ERROR_CATALOGUE[code].message}`), `the row of ${code}, its message as sent`);
  assert.match(tableText, /Authorization: Bearer <key>/);
  // Scalar's mount point stays hidden and empty without its script.
  assert.equal(await page.locator('#app').innerText(), '');

  await mkdir(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: join(ARTIFACTS, 'docs-page-first-view.png') });

  const elsewhere = traffic.requests.filter((url) => !url.startsWith('data:') && new URL(url).origin !== origin);
  assert.deepEqual(elsewhere, [], 'requests to another host');
  assert.ok(traffic.requests.some((url) => url.startsWith(`${origin}/docs/assets/docs-`) && url.endsWith('.css')), 'the style sheet');
  assert.deepEqual(traffic.failed, [], 'failed requests');
  assert.deepEqual(traffic.refused, [], 'answers of 400 or more');
  assert.deepEqual(traffic.consoleErrors, [], 'console errors');
  assert.deepEqual(traffic.consoleWarnings, [], 'console warnings');
});

for (const backend of BACKENDS) {
  const skip = (await backendSkip(backend)) || browserSkipReason;
  test(`${backend}: the docs page in headless Chromium: both operations, the experimental badge, int64, the error codes, try it`, { skip, timeout: 300_000 }, async (t) => {
    // The browser first: after hooks run in order, so it closes before the app, whose close would wait for its connections.
    const context = await launchChromium(t);
    const api = await buildTestApp(t, {
      transport: 'http',
      backend,
      // A document server elsewhere: the page must still call only this server, which "try it" uses first.
      config: { PUBLIC_BASE_URL: 'https://inventory.example/v1' },
      items: [
        { petId: 1n, quantity: 12, status: 'available' },
        { petId: 2n, quantity: 3, status: 'pending' },
      ],
    });
    const page = context.pages()[0] ?? (await context.newPage());
    const traffic = recordTraffic(context, page);
    const origin = new URL(api.baseUrl).origin;

    const loaded = await page.goto(`${api.baseUrl}/docs`);
    assert.equal(loaded?.status(), 200);
    // The first view gives way to Scalar's once Scalar shows the first operation: from here on, everything is Scalar's.
    await page.locator(`#${FIRST_VIEW_ID}`).waitFor({ state: 'detached', timeout: 60_000 });

    // Both operations, by their summaries, as Scalar titles them.
    const section = (summary: string) => page.locator('section', { has: page.locator('h3', { hasText: summary }) }).last();
    const listHeading = page.locator('h3', { hasText: listInventory.summary }).first();
    const updateHeading = page.locator('h3', { hasText: updateInventory.summary }).first();
    await listHeading.waitFor({ state: 'visible', timeout: 20_000 });
    await updateHeading.waitFor({ state: 'visible' });

    // "Experimental" beside the update, with no click: a badge right above its title; none on the list.
    const badge = section(updateInventory.summary).getByText(/^experimental$/i).first();
    assert.ok(await badge.isVisible(), 'the experimental badge is visible');
    const [badgeBox, titleBox] = [await badge.boundingBox(), await updateHeading.boundingBox()];
    assert.ok(badgeBox && titleBox && Math.abs(titleBox.y - badgeBox.y) < 80, `badge ${JSON.stringify(badgeBox)} beside title ${JSON.stringify(titleBox)}`);
    assert.equal(await section(listInventory.summary).getByText(/^experimental$/i).count(), 0, 'listInventory is not experimental');

    // The int64 warning and the table of error codes, from the document's descriptions.
    const text = await page.locator('body').innerText();
    assert.match(text, /int64/);
    assert.match(text, /2\^53|9007199254740993/, 'the warning names where doubles lose digits');
    const codeTable = page.locator('table', { hasText: 'precondition_failed' }).first();
    assert.ok(await codeTable.isVisible(), 'a table of error codes');
    const tableText = await codeTable.innerText();
    for (const code of ERROR_CODES) assert.ok(tableText.includes(code), `${code} in the table of error codes`);
    // Each message as the API sends it: the "<key>" of "Bearer <key>" is text, not an HTML tag the renderer drops.
    for (const code of ERROR_CODES) assert.ok(tableText.includes(ERROR_CATALOGUE[code].message), `the message of ${code} in the table, as sent`);
    assert.match(tableText, /Authorization: Bearer <key>/);

    await mkdir(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, `docs-page-${backend}.png`), fullPage: true });

    // Try it: GET /v1/inventory from Scalar's client, with a bearer key, against this server.
    await section(listInventory.summary).getByRole('button', { name: /test request/i }).first().click();
    const client = page.getByRole('dialog');
    await client.getByPlaceholder('Token').first().fill(api.keys.read);
    const answered = page.waitForResponse((response) => response.url() === `${origin}/v1/inventory` && response.request().method() === 'GET');
    await client.getByRole('button', { name: /^send get request to /i }).first().click();
    const response = await answered;
    assert.equal(response.status(), 200);
    assert.equal(response.request().headers().authorization, `Bearer ${api.keys.read}`);
    assert.deepEqual(JSON.parse(await response.text()), [
      { petId: 1, quantity: 12, status: 'available', reserved: 0, available: 12 },
      { petId: 2, quantity: 3, status: 'pending', reserved: 0, available: 3 },
    ]);
    await client.getByText('200 OK').first().waitFor({ state: 'visible' });
    await client.getByText('"pending"').first().waitFor({ state: 'visible' });
    // The client fades in; the artefact should show it settled.
    await page.waitForTimeout(500);
    await page.screenshot({ path: join(ARTIFACTS, `docs-page-${backend}-try-it.png`) });

    // Everything came from this server, and nothing failed.
    const elsewhere = traffic.requests.filter((url) => !url.startsWith('data:') && new URL(url).origin !== origin);
    assert.deepEqual(elsewhere, [], 'requests to another host');
    for (const path of ['/docs', '/v1/openapi.json', '/v1/inventory']) assert.ok(traffic.requests.includes(`${origin}${path}`), path);
    assert.equal(traffic.requests.filter((url) => url.startsWith(`${origin}/docs/assets/`)).length, 3, traffic.requests.join('\n'));
    assert.deepEqual(traffic.failed, [], 'failed requests');
    assert.deepEqual(traffic.refused, [], 'answers of 400 or more');
    assert.deepEqual(traffic.consoleErrors, [], 'console errors');
    // Scalar warns of what its validator rejects in the document ("document validation errors"): none is expected.
    assert.deepEqual(traffic.consoleWarnings, [], 'console warnings');
  });
}
