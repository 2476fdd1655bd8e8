import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { promisify } from 'node:util';
import type { InventoryItem } from '../../../src/schemas/inventory.js';
import { BACKENDS, backendSkip } from '../../support/backends.js';
import { writeCatalogue } from '../../support/catalogue-files.js';
import { BIN, tempDir } from '../../support/process.js';
import { byScale } from '../../support/scale.js';
import { pets, startService } from '../../support/service.js';

const run = promisify(execFile);

/**
 * A stocktake of a large catalogue while the shop sells: `pets import --upsert` of a file that
 * counts some pets already on sale again and creates many new ones, while clients PATCH and adjust
 * pets in the file and pets not in it the whole time. Every change is answered 2xx (the import
 * never holds the store so long that a sale is refused with 503), the import succeeds, and
 * afterwards every pet's history tells one consistent story: each change, the sales' and the
 * stocktake's, applied once, in some order, on top of the one before.
 */

/** New entries in the file: enough that writing them takes seconds; a million in `npm run test:import-while-serving`. */
const NEW_ENTRIES = byScale(300_000, 1_000_000);
/** Pets on sale before the import: the first half are counted again by the file, the rest are not in it. */
const ON_SALE = 200;
const COUNTED = ON_SALE / 2;
/** Clients sending changes at once, each waiting for its answer before the next. */
const CLIENTS = 4;
/** The stocktake's counts: above anything the clients set, so each import row is told apart from theirs. */
const COUNT_BASE = 1_000_000;

/** The clients' changes: PATCHes to an absolute count below COUNT_BASE and adjustments of +1, to pets in the file and not. */
interface Tally {
  sent: number;
  ok: Map<bigint, number>;
  refused: string[];
  /** The longest wait for an answer, in ms: printed, never asserted. */
  slowest: number;
}

async function sell(baseUrl: string, key: string, until: () => boolean, tally: Tally, client: number): Promise<void> {
  for (let n = client; !until(); n += CLIENTS) {
    const petId = BigInt((n % ON_SALE) + 1);
    const adjust = n % 3 === 0;
    const sent = Date.now();
    const res = await fetch(`${baseUrl}/v1/inventory/${petId}${adjust ? '/adjustments' : ''}`, {
      method: adjust ? 'POST' : 'PATCH',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(adjust ? { delta: 1, reason: 'received' } : { quantity: n % 1000, reason: 'sold' }),
    });
    const body = await res.text();
    tally.sent++;
    tally.slowest = Math.max(tally.slowest, Date.now() - sent);
    if (res.status >= 200 && res.status < 300) tally.ok.set(petId, (tally.ok.get(petId) ?? 0) + 1);
    else tally.refused.push(`${adjust ? 'POST adjustments' : 'PATCH'} ${petId}: ${res.status} ${body}`);
  }
}

for (const backend of BACKENDS) {
  describe(`pets import of ${NEW_ENTRIES.toLocaleString('en-US')} new entries while serving on ${backend}`, { skip: await backendSkip(backend) }, () => {
    test('every PATCH and adjustment sent meanwhile is answered 2xx, the import succeeds, and every change is in the history once', { timeout: byScale(300_000, 900_000) }, async (t) => {
      // Neither the rate limit nor load shedding is under test: on a shared machine an import and a
      // server on two cores can delay the server's event loop past its limit, a 503 of another cause.
      const env = { RATE_LIMIT_PER_MINUTE: '0', MAX_EVENT_LOOP_DELAY_MS: '0' };
      const service = await startService(t, backend, { items: pets(ON_SALE), quiet: true, env });
      const dir = tempDir(t);
      const file = join(dir, 'stocktake.csv');
      const counted: InventoryItem[] = pets(COUNTED).map((item, i) => ({ ...item, quantity: COUNT_BASE + i }));
      const created: InventoryItem[] = Array.from({ length: NEW_ENTRIES }, (_, i) => ({ petId: BigInt(ON_SALE + 1 + i), quantity: i % 1000, status: 'available' as const }));
      await writeCatalogue(file, [...counted, ...created], 'csv');

      const tally: Tally = { sent: 0, ok: new Map(), refused: [], slowest: 0 };
      let importing = true;
      const clients = Array.from({ length: CLIENTS }, (_, c) => sell(service.server.baseUrl, service.keys.write, () => !importing, tally, c));
      const started = Date.now();
      const imported = await run(BIN, ['pets', 'import', '--upsert', file], { env: { ...process.env, DATABASE_URL: service.db.databaseUrl }, maxBuffer: 16 * 1024 * 1024 }).then(
        ({ stdout }) => ({ code: 0, out: stdout, err: '' }),
        (err: { code: number; stdout: string; stderr: string }) => ({ code: err.code, out: err.stdout, err: err.stderr }),
      );
      const seconds = (Date.now() - started) / 1000;
      importing = false;
      await Promise.all(clients);
      t.diagnostic(`${backend}: import took ${seconds.toFixed(1)} s (${imported.out.trim()}); ${tally.sent} changes sent meanwhile, ${tally.refused.length} refused, the slowest answered in ${tally.slowest} ms`);

      assert.equal(imported.code, 0, imported.err);
      assert.match(imported.out, new RegExp(`^read ${(COUNTED + NEW_ENTRIES).toLocaleString('en-US')}, created ${NEW_ENTRIES.toLocaleString('en-US')}, updated ${COUNTED}, unchanged 0, rejected 0 in `));
      assert.deepEqual(tally.refused.slice(0, 10), [], `${tally.refused.length} of ${tally.sent} changes refused while importing`);
      assert.ok(tally.sent >= CLIENTS, 'the clients sent changes while the import ran');

      const { store } = service;
      // Every pet on sale: its history, oldest first, chains each change onto the one before, and holds
      // one row per change acknowledged, plus the stocktake's for each pet the file counts.
      for (let i = 1; i <= ON_SALE; i++) {
        const petId = BigInt(i);
        const rows = (await store.history.listHistory(petId, { limit: 100_000 }))!.slice().reverse();
        const fromImport = rows.filter((r) => r.keyId === 'cli:import');
        assert.equal(fromImport.length, i <= COUNTED ? 1 : 0, `pet ${i}: the stocktake's rows`);
        if (i <= COUNTED) assert.equal(fromImport[0]!.quantity, COUNT_BASE + i - 1, `pet ${i}: the stocktake's count`);
        assert.equal(rows.length - fromImport.length, tally.ok.get(petId) ?? 0, `pet ${i}: one history row per change acknowledged`);
        rows.forEach((row, k) => {
          if (k > 0) assert.equal(row.previousQuantity, rows[k - 1]!.quantity, `pet ${i}: history row ${k} follows the one before`);
        });
        const entry = await store.entries.getEntry(petId);
        assert.equal(entry?.item.quantity, rows.at(-1)?.quantity ?? 0, `pet ${i}: the entry holds its last change`);
      }
      // The new entries: all there, with the file's counts.
      const listed = await store.entries.listInventory();
      assert.equal(listed.length, ON_SALE + NEW_ENTRIES);
      for (const item of [created[0]!, created[NEW_ENTRIES >> 1]!, created.at(-1)!]) assert.deepEqual(listed.find((e) => e.petId === item.petId), item);
    });
  });
}
