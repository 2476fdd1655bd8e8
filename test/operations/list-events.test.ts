import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { EVENTS_LIMIT_MAX } from '../../src/operations/list-events.js';
import { assertError, buildTestApp, makeKey, type TestApp, type TestResponse } from '../support/app.js';
import { BACKENDS, backendSkip } from '../support/backends.js';
import { PET_1_AND_INT64_MAX, INT64_MAX_ID } from '../support/pets.js';
import { patch } from '../support/requests.js';

/** One event as the feed sends it. */
interface EventJson {
  id: string;
  seq: number;
  type: string;
  occurredAt: string;
  data: { petId: number; status: string; previousQuantity: number | null; quantity: number | null; version: number; reason: string | null; source: string; keyId: string | null; requestId: string | null };
}

function feed(api: TestApp, query = '', key = api.keys.read): Promise<TestResponse> {
  return api.request({ method: 'GET', url: `/v1/events${query}`, key });
}

function items(res: TestResponse): EventJson[] {
  assert.equal(res.status, 200, res.text);
  return res.json<{ items: EventJson[] }>().items;
}

function head(res: TestResponse): number {
  const value = res.headers['x-events-head'];
  assert.match(String(value), /^(0|[1-9]\d*)$/, `X-Events-Head on ${res.status}`);
  return Number(value);
}

/** Follows the feed from `after` to the end, a page of `limit` at a time; the events in order. */
async function followFeed(api: TestApp, after: number, limit = EVENTS_LIMIT_MAX): Promise<EventJson[]> {
  const all: EventJson[] = [];
  for (;;) {
    const page = items(await feed(api, `?after=${after}&limit=${limit}`));
    if (page.length === 0) return all;
    all.push(...page);
    after = page.at(-1)!.seq;
  }
}

for (const backend of BACKENDS) {
  describe(`the event feed on ${backend}: GET /v1/events`, { skip: await backendSkip(backend) }, () => {
    test('oldest first, each event whole (petIds exact), paged by after and limit, X-Events-Head on every page', async (t) => {
      const api = await buildTestApp(t, { backend, items: PET_1_AND_INT64_MAX });
      const start = head(await feed(api));
      await patch(api, '1', { quantity: 11, reason: 'received' }, { headers: { 'x-request-id': 'req-ev-1' } });
      await patch(api, INT64_MAX_ID, { quantity: 7 });
      await patch(api, '1', { quantity: 9 });
      const first = await feed(api, `?after=${start}&limit=2`);
      const page = items(first);
      assert.equal(page.length, 2);
      assert.ok(head(first) > page[1]!.seq, 'the head is past this page');
      const [a, b] = page;
      assert.equal(a!.id, `evt_${a!.seq}`);
      assert.ok(a!.seq > start && b!.seq > a!.seq, 'seq increases');
      assert.equal(a!.type, 'inventory.updated');
      assert.deepEqual({ ...a!.data, keyId: undefined }, {
        petId: 1,
        status: 'available',
        previousQuantity: 10,
        quantity: 11,
        version: a!.data.version,
        reason: 'received',
        source: 'api',
        keyId: undefined,
        requestId: 'req-ev-1',
      });
      assert.match(a!.data.keyId!, /^key_/);
      assert.match(a!.occurredAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      assert.match(first.text, new RegExp(`"petId":${INT64_MAX_ID}`), 'the int64 petId keeps every digit');
      const rest = await feed(api, `?after=${b!.seq}&limit=2`);
      assert.deepEqual(items(rest).map((e) => e.data.quantity), [9]);
      const last = items(rest)[0]!.seq;
      assert.equal(head(rest), last, 'the head is the newest seq');
      const caughtUp = await feed(api, `?after=${last}`);
      assert.deepEqual(items(caughtUp), [], 'an empty page: caught up');
      assert.equal(head(caughtUp), last);
      // Past the head: nothing yet, still 200.
      assertError(await feed(api, `?after=${last + 1000}`), 409, 'events_beyond_head');
      // Default after=0: from the oldest kept, whole events only.
      assert.ok(items(await feed(api)).every((e) => e.seq <= last));
    });

    test('X-Events-Head on the list and its 304; loading the list then following the feed gives no gap and no double', async (t) => {
      const api = await buildTestApp(t, { backend, items: PET_1_AND_INT64_MAX });
      await patch(api, '1', { quantity: 20 });
      const list = await api.request({ method: 'GET', url: '/v1/inventory', key: api.keys.read });
      assert.equal(list.status, 200);
      const listHead = head(list);
      assert.equal(listHead, head(await feed(api)), 'the list and the feed agree on the head');
      const notModified = await api.request({ method: 'GET', url: '/v1/inventory', key: api.keys.read, headers: { 'if-none-match': String(list.headers.etag) } });
      assert.equal(notModified.status, 304);
      assert.equal(head(notModified), listHead);
      // Changes after the list are exactly the events after its head.
      await patch(api, '1', { quantity: 21 });
      await patch(api, INT64_MAX_ID, { quantity: 5 });
      const after = await followFeed(api, listHead);
      assert.deepEqual(after.map((e) => e.data.quantity), [21, 5]);
      assert.deepEqual(after.map((e) => e.seq), [...new Set(after.map((e) => e.seq))].sort((x, y) => x - y));
      const next = await api.request({ method: 'GET', url: '/v1/inventory', key: api.keys.read });
      assert.equal(head(next), after.at(-1)!.seq);
    });

    test('a reader following the feed while 20 writers change 50 pets ends with the quantities of the list', async (t) => {
      const pets = Array.from({ length: 50 }, (_, i) => ({ petId: BigInt(i + 1), quantity: 0, status: 'available' as const }));
      const api = await buildTestApp(t, { backend, items: pets });
      const list = await api.request({ method: 'GET', url: '/v1/inventory', key: api.keys.read });
      const held = new Map<number, number>(list.json<{ petId: number; quantity: number }[]>().map((i) => [i.petId, i.quantity]));
      let position = head(list);
      let writing = true;
      const seen = new Set<number>();
      const apply = (events: EventJson[]) => {
        for (const e of events) {
          assert.ok(e.seq > position, `seq ${e.seq} after ${position}: in order, never twice`);
          assert.ok(!seen.has(e.seq));
          seen.add(e.seq);
          position = e.seq;
          if (e.data.quantity !== null) held.set(e.data.petId, e.data.quantity);
        }
      };
      const reader = (async () => {
        while (writing) {
          apply(items(await feed(api, `?after=${position}&limit=7`)));
          await new Promise((wake) => setImmediate(wake));
        }
        apply(await followFeed(api, position, 7));
      })();
      const writers = Array.from({ length: 20 }, async (_, w) => {
        for (let i = 0; i < 10; i++) {
          const petId = ((w * 7 + i * 13) % 50) + 1;
          assert.equal((await patch(api, String(petId), { quantity: w * 100 + i })).status, 200);
        }
      });
      await Promise.all(writers);
      writing = false;
      await reader;
      const final = await api.request({ method: 'GET', url: '/v1/inventory', key: api.keys.read });
      assert.deepEqual(Object.fromEntries(held), Object.fromEntries(final.json<{ petId: number; quantity: number }[]>().map((i) => [i.petId, i.quantity])));
      assert.equal(seen.size, 200, 'one event per change');
      assert.equal(head(final), position);
    });

    test('410 events_pruned with X-Events-Head when the position was pruned; the head is a fresh start', async (t) => {
      const api = await buildTestApp(t, { backend, items: PET_1_AND_INT64_MAX });
      await patch(api, '1', { quantity: 1 });
      await patch(api, '1', { quantity: 2 });
      const newest = head(await feed(api));
      // Everything up to now is older than a moment from now.
      await api.store.events.purgeEvents(new Date(Date.now() + 60_000));
      const gone = await feed(api, '?after=0');
      const body = assertError(gone, 410, 'events_pruned');
      assert.match(body.message, /reload the list/);
      assert.match(body.message, /X-Events-Head/);
      assert.equal(head(gone), newest);
      assert.equal(gone.headers['cache-control'], 'no-store');
      const list = await api.request({ method: 'GET', url: '/v1/inventory', key: api.keys.read });
      assert.equal(head(list), newest);
      assert.deepEqual(items(await feed(api, `?after=${newest}`)), [], 'following from the head works');
      await patch(api, '1', { quantity: 3 });
      assert.deepEqual(items(await feed(api, `?after=${newest}`)).map((e) => e.data.quantity), [3]);
    });

    test('409 events_beyond_head with X-Events-Head when after is beyond the newest event (a rebuilt store); the head is a fresh start', async (t) => {
      const api = await buildTestApp(t, { backend, items: PET_1_AND_INT64_MAX });
      await patch(api, '1', { quantity: 1 });
      const newest = head(await feed(api));
      const beyond = await feed(api, `?after=${newest + 5}`);
      const body = assertError(beyond, 409, 'events_beyond_head');
      assert.equal(
        body.message,
        `No event has seq ${newest + 5}: the newest is ${newest} (the store was rebuilt, or the seq is from another store). Reload the list, then follow the events after ${newest}.`,
      );
      assert.equal(head(beyond), newest);
      assert.deepEqual(items(await feed(api, `?after=${newest}`)), [], 'at the head itself: caught up, not beyond');
      await patch(api, '1', { quantity: 2 });
      assert.deepEqual(items(await feed(api, `?after=${newest}`)).map((e) => e.data.quantity), [2], 'following from the head works');
      assertError(await feed(api, '?after=9007199254740991'), 409, 'events_beyond_head');
    });

    test('400 invalid_parameter for a bad after or limit, said in words; 401 without a valid key; 403 for a key without the read scope', async (t) => {
      const api = await buildTestApp(t, { backend, items: PET_1_AND_INT64_MAX });
      const afterMessage = 'Query parameter "after" must be a seq: an integer from 0 to 9007199254740991.';
      const limitMessage = 'Query parameter "limit" must be an integer from 1 to 1000.';
      const refusals: [string, string][] = [
        ['?after=-1', afterMessage],
        ['?after=1.5', afterMessage],
        ['?after=01', afterMessage],
        ['?after=', afterMessage],
        ['?after=abc', afterMessage],
        ['?after=9007199254740992', afterMessage],
        ['?after=99999999999999999', afterMessage],
        ['?after=1&after=2', afterMessage],
        ['?limit=0', limitMessage],
        ['?limit=1001', limitMessage],
        ['?limit=2.5', limitMessage],
        ['?limit=', limitMessage],
        ['?cursor=1', 'Unknown query parameter "cursor": this operation takes only "after" and "limit".'],
      ];
      for (const [query, message] of refusals) assert.equal(assertError(await feed(api, query), 400, 'invalid_parameter').message, message, query);
      assertError(await feed(api, '?after=9007199254740991&limit=1000'), 409, 'events_beyond_head'); // the largest seq and limit are valid: beyond the head, not a bad parameter
      assertError(await api.request({ method: 'GET', url: '/v1/events' }), 401, 'unauthorized');
      assertError(await feed(api, '', 'inv_live_not-a-key'), 401, 'unauthorized');
      // Authentication before the parameters.
      assertError(await api.request({ method: 'GET', url: '/v1/events?after=x' }), 401, 'unauthorized');
      // The service issues no key without a scope; one stored without any is refused the read scope.
      const scopeless = await makeKey(api.store, api.config.environment, []);
      const refused = await api.app.inject({ method: 'GET', url: '/v1/events', headers: { authorization: `Bearer ${scopeless}` } });
      const forbidden = { status: refused.statusCode, headers: refused.headers as TestResponse['headers'], text: refused.body, json: <T>() => JSON.parse(refused.body) as T };
      assert.match(assertError(forbidden, 403, 'forbidden').message, /inventory:read/);
    });
  });
}
