import assert from 'node:assert/strict';
import { get, type IncomingHttpHeaders } from 'node:http';
import { describe, test } from 'node:test';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { openStore } from '../../src/store/open.js';
import type { InventoryItem } from '../../src/schemas/inventory.js';
import { BACKENDS, backendSkip, createTestDatabase } from '../support/backends.js';
import { buildTestApp, type TestApp } from '../support/app.js';
import { change } from '../support/store.js';

const MANY: InventoryItem[] = Array.from({ length: 300 }, (_, i) => ({ petId: BigInt(i + 1), quantity: i, status: 'available' }));

/** A GET that keeps the body as sent: fetch would decode it. */
function rawGet(url: string, headers: Record<string, string>): Promise<{ headers: IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    get(url, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
    }).on('error', reject);
  });
}

function list(api: TestApp, headers: Record<string, string> = {}) {
  return api.request({ method: 'GET', url: '/v1/inventory', key: api.keys.read, headers });
}

for (const backend of BACKENDS) {
  describe(`GET /v1/inventory from the list cache on ${backend}`, { skip: await backendSkip(backend) }, () => {
    test('a strong ETag per store version; If-None-Match answers 304 until something changes', async (t) => {
      const api = await buildTestApp(t, { backend, items: MANY.slice(0, 2) });
      const first = await list(api);
      assert.match(String(first.headers.etag), /^"[^"]+"$/);
      assert.equal(first.headers.vary, 'Accept-Encoding');
      const again = await list(api, { 'if-none-match': String(first.headers.etag) });
      assert.equal(again.status, 304);
      assert.equal(again.text, '');
      assert.equal(again.headers.etag, first.headers.etag);
      await api.request({ method: 'PATCH', url: '/v1/inventory/2', key: api.keys.write, body: { quantity: 50 } });
      const changed = await list(api, { 'if-none-match': String(first.headers.etag) });
      assert.equal(changed.status, 200);
      assert.notEqual(changed.headers.etag, first.headers.etag);
      assert.equal(changed.text, '[{"petId":1,"quantity":0,"status":"available","reserved":0,"available":0},{"petId":2,"quantity":50,"status":"available","reserved":0,"available":50}]');
    });

    test('br or gzip when the client accepts it and the list is over 1 KiB; the bytes decode to the same JSON', async (t) => {
      const api = await buildTestApp(t, { backend, items: MANY, transport: 'http' });
      const plain = await list(api);
      assert.equal(plain.headers['content-encoding'], undefined);
      for (const [accept, coding, decode] of [
        ['gzip, deflate, br', 'br', brotliDecompressSync],
        ['gzip;q=1, br;q=0', 'gzip', gunzipSync],
      ] as const) {
        const res = await rawGet(`${api.baseUrl}/v1/inventory`, { authorization: `Bearer ${api.keys.read}`, 'accept-encoding': accept });
        assert.equal(res.headers['content-encoding'], coding);
        assert.equal(decode(res.body).toString(), plain.text);
        assert.notEqual(res.headers.etag, plain.headers.etag, 'each coding its own strong ETag');
      }
      const identityOnly = await list(api, { 'accept-encoding': 'identity, gzip;q=0, br;q=0' });
      assert.equal(identityOnly.headers['content-encoding'], undefined);
    });

    test('small lists are never compressed', async (t) => {
      const api = await buildTestApp(t, { backend, items: MANY.slice(0, 3) });
      const res = await list(api, { 'accept-encoding': 'br, gzip' });
      assert.equal(res.headers['content-encoding'], undefined);
    });

    test('a change made through another store on the same database (another process or instance) is in the next GET', async (t) => {
      const db = await createTestDatabase(backend, t);
      const api = await buildTestApp(t, { backend, items: MANY.slice(0, 3), databaseUrl: db.databaseUrl });
      assert.match((await list(api)).text, /"petId":2,"quantity":1,/);
      const other = await openStore(db.databaseUrl);
      t.after(() => other.close());
      await other.changes.applyChange(change(2n, 77));
      assert.match((await list(api)).text, /"petId":2,"quantity":77,/);
      await other.changes.addItems([{ petId: 0n, quantity: 5, status: 'sold' }]);
      assert.match((await list(api)).text, /^\[\{"petId":0,"quantity":5,"status":"sold","reserved":0,"available":5\},\{"petId":1,/);
      await other.changes.retireEntry(1n, { force: true, at: new Date() });
      assert.equal((await list(api)).text, '[{"petId":0,"quantity":5,"status":"sold","reserved":0,"available":5},{"petId":2,"quantity":77,"status":"available","reserved":0,"available":77},{"petId":3,"quantity":2,"status":"available","reserved":0,"available":2}]');
    });

    test('a bulk creation through another store is in the next GET, retired entries left out', async (t) => {
      const db = await createTestDatabase(backend, t);
      const api = await buildTestApp(t, { backend, items: MANY.slice(0, 3), databaseUrl: db.databaseUrl });
      await list(api);
      const other = await openStore(db.databaseUrl);
      t.after(() => other.close());
      await other.changes.retireEntry(2n, { force: true, at: new Date() });
      // More than the stores name one by one: the cache gets, and rebuilds from, the whole list.
      const bulk = Array.from({ length: 10_001 }, (_, i): InventoryItem => ({ petId: BigInt(1000 + i), quantity: 1, status: 'pending' }));
      await other.changes.addItems(bulk);
      const text = (await list(api)).text;
      assert.ok(text.startsWith('[{"petId":1,"quantity":0,"status":"available","reserved":0,"available":0},{"petId":3,"quantity":2,"status":"available","reserved":0,"available":2},{"petId":1000,'), text.slice(0, 200));
      assert.equal((JSON.parse(text) as unknown[]).length, 2 + bulk.length);
    });
  });
}
