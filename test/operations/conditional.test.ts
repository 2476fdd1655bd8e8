import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { BACKENDS, backendSkip } from '../support/backends.js';
import { assertError, buildTestApp } from '../support/app.js';
import { itemOf } from '../support/store.js';
import { getItem, history, patch, type HistoryJson } from '../support/requests.js';
import { PET_1_AND_INT64_MAX } from '../support/pets.js';
import { byScale } from '../support/scale.js';

/**
 * Clients contending for one entry, and the increments each makes: every round of GET then PATCH
 * lets one client through and sends the rest back with a 412, so the requests grow with clients ×
 * increments. Short in `npm test`; HARDENING_SCALE=full runs the 20 × 25 it was written with.
 */
const CLIENTS = byScale(8, 20);
const INCREMENTS = byScale(10, 25);
const TOTAL = CLIENTS * INCREMENTS;


for (const backend of BACKENDS) {
  describe(`integrity on ${backend}`, { skip: await backendSkip(backend) }, () => {
    describe('conditional PATCH (If-Match)', () => {
      test('PATCH answers the new ETag; the ETag of a GET updates once, then is stale: 412 with the current ETag', async (t) => {
        const api = await buildTestApp(t, { backend, items: PET_1_AND_INT64_MAX });
        const etag = String((await getItem(api, '1')).headers.etag);
        const first = await patch(api, '1', { quantity: 11 }, { headers: { 'if-match': etag } });
        assert.equal(first.status, 200);
        assert.deepEqual(first.json(), { petId: 1, quantity: 11, status: 'available', reserved: 0, available: 11 });
        const newEtag = String(first.headers.etag);
        assert.notEqual(newEtag, etag);
        assert.equal((await getItem(api, '1')).headers.etag, newEtag);

        const stale = await patch(api, '1', { quantity: 99 }, { headers: { 'if-match': etag } });
        assertError(stale, 412, 'precondition_failed');
        assert.equal(stale.headers.etag, newEtag, 'the current ETag comes with the 412');
        assert.equal((await itemOf(api.store, 1n))?.quantity, 11, 'nothing changed');
      });

      test('If-Match: * matches any existing entry; a list matches any of its tags; a weak tag never matches', async (t) => {
        const api = await buildTestApp(t, { backend, items: PET_1_AND_INT64_MAX });
        const etag = String((await getItem(api, '1')).headers.etag);
        assert.equal((await patch(api, '1', { quantity: 1 }, { headers: { 'if-match': '*' } })).status, 200);
        const current = String((await getItem(api, '1')).headers.etag);
        assert.equal((await patch(api, '1', { quantity: 2 }, { headers: { 'if-match': `${etag}, ${current}` } })).status, 200);
        const now = String((await getItem(api, '1')).headers.etag);
        assertError(await patch(api, '1', { quantity: 3 }, { headers: { 'if-match': `W/${now}` } }), 412, 'precondition_failed');
      });

      test('404 wins over the precondition for a pet with no entry; 400 invalid_parameter for a malformed If-Match', async (t) => {
        const api = await buildTestApp(t, { backend, items: PET_1_AND_INT64_MAX });
        assertError(await patch(api, '5', { quantity: 1 }, { headers: { 'if-match': '*' } }), 404, 'not_found');
        const bad = assertError(await patch(api, '1', { quantity: 1 }, { headers: { 'if-match': 'v1' } }), 400, 'invalid_parameter');
        assert.match(bad.message, /If-Match/);
      });

      test('with REQUIRE_IF_MATCH=true a PATCH without If-Match is 428 precondition_required and changes nothing', async (t) => {
        const api = await buildTestApp(t, { backend, items: PET_1_AND_INT64_MAX, config: { REQUIRE_IF_MATCH: 'true' } });
        assertError(await patch(api, '1', { quantity: 3 }), 428, 'precondition_required');
        assert.equal((await itemOf(api.store, 1n))?.quantity, 10);
        const etag = String((await getItem(api, '1')).headers.etag);
        assert.equal((await patch(api, '1', { quantity: 3 }, { headers: { 'if-match': etag } })).status, 200);
      });

      test(`${CLIENTS} clients each add 1 to one entry ${INCREMENTS} times by GET then PATCH If-Match, retrying on 412: +${TOTAL} exactly, ${TOTAL} chained history rows`, async (t) => {
        // Thousands of 412 retries from one key within a minute: the rate limit is not what this tests.
        const api = await buildTestApp(t, { backend, items: PET_1_AND_INT64_MAX, transport: 'http', config: { RATE_LIMIT_PER_MINUTE: '0' } });
        let conflicts = 0;
        const client = async () => {
          for (let done = 0; done < INCREMENTS; ) {
            const read = await getItem(api, '1');
            const { quantity } = read.json<{ quantity: number }>();
            const res = await patch(api, '1', { quantity: quantity + 1 }, { headers: { 'if-match': String(read.headers.etag) } });
            if (res.status === 412) {
              conflicts++;
              continue;
            }
            assert.equal(res.status, 200, res.text);
            done++;
          }
        };
        await Promise.all(Array.from({ length: CLIENTS }, client));
        assert.equal((await itemOf(api.store, 1n))?.quantity, 10 + TOTAL);
        const rows: HistoryJson['items'] = [];
        for (let cursor: string | null = ''; cursor !== null; ) {
          const page: HistoryJson = (await history(api, '1', `?limit=500${cursor ? `&cursor=${cursor}` : ''}`)).json<HistoryJson>();
          rows.push(...page.items);
          cursor = page.nextCursor;
        }
        assert.equal(rows.length, TOTAL);
        // Newest first: each row's previous value is the next (older) row's new value, down to the start.
        rows.forEach((row, i) => {
          assert.equal(row.quantity, row.previousQuantity + 1);
          assert.equal(row.previousQuantity, i === rows.length - 1 ? 10 : rows[i + 1]!.quantity);
        });
        t.diagnostic(`${conflicts} conflicts (412) retried`);
      });
    });
  });
}
