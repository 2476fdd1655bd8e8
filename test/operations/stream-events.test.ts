import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { assertError, buildTestApp, makeKey, type TestApp, type TestResponse } from '../support/app.js';
import { BACKENDS, backendSkip } from '../support/backends.js';
import { StreamClient, type SseMessage } from '../support/event-stream.js';
import { PET_1_AND_INT64_MAX, INT64_MAX_ID } from '../support/pets.js';
import { patch } from '../support/requests.js';
import { setQuantity } from '../support/store.js';

/** The data of an event message, parsed. */
function dataOf(message: SseMessage): { seq: number; type: string; data: { petId: number; quantity: number | null } } {
  return JSON.parse(message.data!) as { seq: number; type: string; data: { petId: number; quantity: number | null } };
}

/** A stream of the app, closed when the test ends. */
function stream(t: { after: (fn: () => void) => void }, api: TestApp, options: ConstructorParameters<typeof StreamClient>[1] = {}): StreamClient {
  const client = new StreamClient(api.baseUrl, { key: api.keys.read, ...options });
  t.after(() => client.close());
  return client;
}

/** The Error answer of a refused stream, as the other tests read answers. */
async function refusal(client: StreamClient): Promise<TestResponse> {
  const text = await client.body();
  return { status: client.status, headers: client.headers, text, json: <T>() => JSON.parse(text) as T };
}

async function feedHead(api: TestApp): Promise<number> {
  return Number((await api.request({ method: 'GET', url: '/v1/events', key: api.keys.read })).headers['x-events-head']);
}

/** Every seq of the feed after `after`. */
async function feedSeqs(api: TestApp, after: number): Promise<number[]> {
  const seqs: number[] = [];
  for (;;) {
    const page = (await api.request({ method: 'GET', url: `/v1/events?after=${after}&limit=1000`, key: api.keys.read })).json<{ items: { seq: number }[] }>().items;
    if (page.length === 0) return seqs;
    seqs.push(...page.map((e) => e.seq));
    after = page.at(-1)!.seq;
  }
}

for (const backend of BACKENDS) {
  describe(`the event stream on ${backend}: GET /v1/events/stream`, { skip: await backendSkip(backend) }, () => {
    test('replays what was missed after ?after=, then streams live; SSE framing and headers', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PET_1_AND_INT64_MAX });
      const start = await feedHead(api);
      await patch(api, '1', { quantity: 1 });
      await patch(api, INT64_MAX_ID, { quantity: 2 });
      const client = await stream(t, api, { query: `?after=${start}` }).opened();
      assert.equal(client.status, 200);
      assert.equal(client.headers['content-type'], 'text/event-stream; charset=utf-8');
      assert.equal(client.headers['cache-control'], 'no-store');
      assert.equal(client.headers['x-accel-buffering'], 'no');
      assert.ok(Number(client.headers['x-events-head']) >= start + 2, 'X-Events-Head: the head when it opened');
      assert.ok(client.headers['x-request-id']);
      await client.until((c) => c.events.length === 2, 'the two missed events');
      await patch(api, '1', { quantity: 3 });
      await client.until((c) => c.events.length === 3, 'the live event');
      const [first, second, live] = client.events;
      for (const message of [first!, second!, live!]) {
        const event = dataOf(message);
        assert.equal(message.id, String(event.seq), 'id: the seq');
        assert.equal(message.event, event.type, 'event: the type');
      }
      assert.deepEqual(client.events.map((m) => dataOf(m).data.quantity), [1, 2, 3]);
      assert.match(second!.data!, new RegExp(`"petId":${INT64_MAX_ID}`), 'exact petIds');
      assert.deepEqual(client.seqs, await feedSeqs(api, start), 'what the feed has, in its order');
    });

    test('without a position it starts at the head; Last-Event-ID wins over ?after=', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PET_1_AND_INT64_MAX });
      await patch(api, '1', { quantity: 1 });
      const head = await feedHead(api);
      const atHead = await stream(t, api).opened();
      assert.equal(Number(atHead.headers['x-events-head']), head);
      await patch(api, '1', { quantity: 2 });
      await atHead.until((c) => c.events.length === 1, 'the change after the head');
      assert.equal(dataOf(atHead.events[0]!).data.quantity, 2);
      const resumed = stream(t, api, { query: '?after=0', headers: { 'last-event-id': String(head) } });
      await resumed.until((c) => c.events.length === 1, 'the event after Last-Event-ID');
      assert.deepEqual(resumed.seqs, atHead.seqs);
    });

    test('a stream cut mid-way and resumed with Last-Event-ID sees every event once, while writers go on', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PET_1_AND_INT64_MAX });
      const start = await feedHead(api);
      let writing = true;
      const writer = (async () => {
        for (let q = 1; writing || q <= 40; q++) assert.equal((await patch(api, q % 2 ? '1' : INT64_MAX_ID, { quantity: q })).status, 200);
      })();
      const received: number[] = [];
      let lastId = String(start);
      for (let round = 0; round < 4; round++) {
        const client = stream(t, api, { headers: { 'last-event-id': lastId } });
        await client.until((c) => c.events.length >= 5, `five events in round ${round}`);
        client.close();
        await client.ended;
        received.push(...client.seqs);
        lastId = client.events.at(-1)!.id!;
      }
      writing = false;
      await writer;
      const tail = stream(t, api, { headers: { 'last-event-id': lastId } });
      const all = await feedSeqs(api, start);
      await tail.until((c) => received.length + c.events.length >= all.length, 'the rest');
      received.push(...tail.seqs);
      assert.deepEqual(received, all, 'no gap and no double across four reconnections');
    });

    test('a pruned position gets event: reset with the head, then the stream goes on from it', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PET_1_AND_INT64_MAX });
      await patch(api, '1', { quantity: 1 });
      await patch(api, '1', { quantity: 2 });
      const head = await feedHead(api);
      await api.store.events.purgeEvents(new Date(Date.now() + 60_000));
      const client = stream(t, api, { headers: { 'last-event-id': '0' } });
      await client.until((c) => c.messages.some((m) => m.event === 'reset'), 'the reset');
      const reset = client.messages.find((m) => m.event === 'reset')!;
      assert.deepEqual(JSON.parse(reset.data!), { head });
      assert.equal(reset.id, undefined, 'a reset is no event of the log');
      await patch(api, '1', { quantity: 3 });
      await client.until((c) => c.events.length === 1, 'the event after the reset');
      assert.equal(dataOf(client.events[0]!).data.quantity, 3);
      assert.ok(client.seqs[0]! > head);
    });

    test('a Last-Event-ID beyond the head (a rebuilt store) gets event: reset with the head, then the events appended after it', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PET_1_AND_INT64_MAX });
      await patch(api, '1', { quantity: 1 });
      const head = await feedHead(api);
      const client = stream(t, api, { headers: { 'last-event-id': String(head + 100) } });
      await client.until((c) => c.messages.some((m) => m.event === 'reset'), 'the reset');
      const reset = client.messages.find((m) => m.event === 'reset')!;
      assert.deepEqual(JSON.parse(reset.data!), { head });
      assert.equal(reset.id, undefined, 'a reset is no event of the log');
      await patch(api, '1', { quantity: 2 });
      await patch(api, '1', { quantity: 3 });
      await client.until((c) => c.events.length === 2, 'the events after the reset');
      assert.deepEqual(client.events.map((e) => dataOf(e).data.quantity), [2, 3]);
      assert.deepEqual(client.seqs, [head + 1, head + 2]);
      assert.equal(client.messages.filter((m) => m.event === 'reset').length, 1, 'one reset');
    });

    test('a comment line at each heartbeat; neither the answer timeout, the request timeout nor keep-alive cuts a quiet stream', async (t) => {
      const api = await buildTestApp(t, {
        backend,
        transport: 'http',
        items: PET_1_AND_INT64_MAX,
        eventHeartbeatMs: 100,
        // An answer must end within 2000 + 2 * 2000 ms, a request arrive within 2000 ms, an idle connection close after 100 ms:
        // short, yet long enough that a loaded machine still opens the stream within them.
        config: { REQUEST_TIMEOUT_MS: '2000', STORE_TIMEOUT_MS: '2000', KEEP_ALIVE_TIMEOUT_MS: '100' },
      });
      const client = await stream(t, api).opened();
      assert.equal(client.status, 200);
      // 65 heartbeats 100 ms apart at the least: past every one of those timeouts.
      await client.until((c) => c.messages.filter((m) => m.comment !== undefined).length >= 65, 'sixty-five heartbeats');
      // The change through the store itself: no other request of this test is subject to those short timeouts.
      await setQuantity(api.store, 1n, 4);
      await client.until((c) => c.events.length === 1, 'an event after the quiet');
      assert.equal(dataOf(client.events[0]!).data.quantity, 4);
    });

    test('a stream is one request to the rate limit, whatever it carries', async (t) => {
      // The limit counts in one-minute windows of real time: a run whose requests fall in two windows (seen as a `t` that
      // grew) proves nothing and runs again, on fresh keys, up to five attempts.
      for (let attempt = 1; ; attempt++) {
        const api = await buildTestApp(t, { backend, transport: 'http', items: PET_1_AND_INT64_MAX, eventHeartbeatMs: 20, config: { RATE_LIMIT_PER_MINUTE: '3' } });
        const client = await stream(t, api).opened();
        assert.equal(client.status, 200);
        assert.match(String(client.headers.ratelimit), /;r=2;/, 'the stream took one request of the key');
        for (let q = 1; q <= 5; q++) await setQuantity(api.store, 1n, q);
        await client.until((c) => c.events.length === 5 && c.messages.filter((m) => m.comment !== undefined).length >= 5, 'five events and five heartbeats');
        // The heartbeats and the events cost the key nothing: two requests are left, then 429.
        const answers = [];
        for (let i = 0; i < 3; i++) answers.push(await api.request({ method: 'GET', url: '/v1/events?limit=1', key: api.keys.read }));
        const resets = [client.headers.ratelimit, ...answers.map((res) => res.headers.ratelimit)].map((h) => Number(/;t=(\d+)$/.exec(String(h))?.[1]));
        // Each key's windows begin at a place of their own in the minute, so any attempt may cross one.
        if (attempt < 5 && resets.some((reset) => reset > resets[0]!)) continue;
        assert.deepEqual(answers.slice(0, 2).map((res) => res.status), [200, 200]);
        assertError(answers[2]!, 429, 'rate_limited');
        return;
      }
    });

    test('at MAX_EVENT_STREAMS a new stream is 503 service_unavailable; a closed one frees its place', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PET_1_AND_INT64_MAX, config: { MAX_EVENT_STREAMS: '2' } });
      const one = await stream(t, api).opened();
      const two = await stream(t, api).opened();
      assert.deepEqual([one.status, two.status], [200, 200]);
      const third = await refusal(stream(t, api));
      assert.match(assertError(third, 503, 'service_unavailable').message, /event streams/);
      assert.equal(third.headers['retry-after'], '1');
      one.close();
      await one.ended;
      // The place is freed once the server has seen the connection go.
      let again = stream(t, api);
      await again.opened();
      for (let tries = 0; again.status !== 200 && tries < 100; tries++) {
        await new Promise((wake) => setTimeout(wake, 50));
        again = stream(t, api);
        await again.opened();
      }
      assert.equal(again.status, 200);
      await patch(api, '1', { quantity: 8 });
      await Promise.all([two, again].map((c) => c.until((x) => x.events.length === 1, 'the event on both streams')));
    });

    test('with MAX_EVENT_STREAMS=0 a stream is 503 service_unavailable pointing at the feed, which still answers', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PET_1_AND_INT64_MAX, config: { MAX_EVENT_STREAMS: '0' } });
      assert.match(assertError(await refusal(stream(t, api)), 503, 'service_unavailable').message, /Event streams are off.*GET \/v1\/events/);
      assert.equal((await api.request({ method: 'GET', url: '/v1/events', key: api.keys.read })).status, 200);
    });

    test('401 without a valid key, 403 without the read scope, 400 for a bad position: each an Error object, before any stream', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PET_1_AND_INT64_MAX });
      assertError(await refusal(stream(t, api, { key: '' })), 401, 'unauthorized');
      const noKey = new StreamClient(api.baseUrl);
      t.after(() => noKey.close());
      const unauthorized = await refusal(noKey);
      assertError(unauthorized, 401, 'unauthorized');
      assert.ok(unauthorized.headers['www-authenticate']);
      assertError(await refusal(stream(t, api, { key: 'inv_live_unknown' })), 401, 'unauthorized');
      const scopeless = await makeKey(api.store, api.config.environment, []);
      assertError(await refusal(stream(t, api, { key: scopeless })), 403, 'forbidden');
      const badId = assertError(await refusal(stream(t, api, { headers: { 'last-event-id': 'evt_3' } })), 400, 'invalid_parameter');
      assert.equal(badId.message, 'Last-Event-ID must be the id of an event this stream sent: an integer from 0 to 9007199254740991.');
      assert.equal(
        assertError(await refusal(stream(t, api, { query: '?after=-2' })), 400, 'invalid_parameter').message,
        'Query parameter "after" must be a seq: an integer from 0 to 9007199254740991.',
      );
      assertError(await refusal(stream(t, api, { query: '?limit=5' })), 400, 'invalid_parameter');
    });

    test('closing the app ends every stream cleanly; a drain ends them at its start and does not wait for them', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PET_1_AND_INT64_MAX });
      const clients = await Promise.all([stream(t, api), stream(t, api), stream(t, api)].map((c) => c.opened()));
      await patch(api, '1', { quantity: 5 });
      await Promise.all(clients.map((c) => c.until((x) => x.events.length === 1, 'the event')));
      // A drain with all the time in the world: it ends the streams and is over once their connections are gone.
      await api.app.connections.drain(600_000);
      assert.deepEqual(await Promise.all(clients.map((c) => c.ended)), ['end', 'end', 'end'], 'ended by the server, not cut');
      assert.equal(api.app.connections.size, 0);
    });

    test('app.close() ends open streams at once', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PET_1_AND_INT64_MAX });
      const clients = await Promise.all([stream(t, api), stream(t, api)].map((c) => c.opened()));
      await api.app.close();
      assert.deepEqual(await Promise.all(clients.map((c) => c.ended)), ['end', 'end']);
    });
  });
}
