import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  createInventoryClient,
  InventoryApiError,
  type FollowedEvent,
  type FollowStatus,
  type InventoryClient,
  type InventoryClientOptions,
  type InventoryEvent,
} from '@petstore/inventory-client';
import { BACKENDS, backendSkip } from '../../../test/support/backends.js';
import { buildTestApp, type TestApp } from '../../../test/support/app.js';

/** An entry's event's data: the tests here make no reservation, so every event is one. */
function stock(e: InventoryEvent): Extract<InventoryEvent['data'], { petId: bigint }> {
  if (!('petId' in e.data)) throw new Error(`a reservation's event: ${e.type}`);
  return e.data;
}

// The built package (dist/), as a user installs it: `npm test` builds it first (pretest).

const ABOVE_SAFE = 2n ** 53n + 1n; // 9007199254740993: the first id a double cannot hold
const INT64_MIN = -(2n ** 63n);

/** One event as the stream writes it. */
function sseEvent(seq: number, petId = ABOVE_SAFE, type = 'inventory.updated'): string {
  const data =
    `{"id":"evt_${seq}","seq":${seq},"type":"${type}","occurredAt":"2026-11-26T10:00:00.000Z","data":{"petId":${petId},"status":"available",` +
    `"previousQuantity":1,"quantity":2,"version":${seq},"reason":null,"source":"api","keyId":"key_1","requestId":"r-${seq}"}}`;
  return `id: ${seq}\nevent: ${type}\ndata: ${data}\n\n`;
}

/**
 * A stream answer that sends `chunks`, then ends, or (open) stays open until the request is
 * aborted; `deaf`, it never hears the abort (only a cancel of its body ends it).
 */
function streamAnswer(request: Request, chunks: string[], { open = false, deaf = false } = {}): Response {
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(new TextEncoder().encode(chunk));
      if (!open) controller.close();
      // As fetch does: aborting the request errors its body.
      if (!deaf) request.signal.addEventListener('abort', () => controller.error(new DOMException('aborted', 'AbortError')), { once: true });
    },
  });
  return new Response(body, { headers: { 'content-type': 'text/event-stream; charset=utf-8' } });
}

/** A sleep that records what it was asked to wait and returns at once. */
function recordedSleep(): { sleeps: number[]; sleep: (ms: number) => Promise<void> } {
  const sleeps: number[] = [];
  return { sleeps, sleep: (ms) => (sleeps.push(ms), Promise.resolve()) };
}

/** Collects what the iterator yields until `enough` says stop, then aborts; resolves with what came. */
async function follow(client: InventoryClient, enough: (items: FollowedEvent[]) => boolean, options: Parameters<InventoryClient['followEvents']>[0] = {}): Promise<FollowedEvent[]> {
  const stop = new AbortController();
  const items: FollowedEvent[] = [];
  for await (const item of client.followEvents({ ...options, signal: stop.signal })) {
    items.push(item);
    if (enough(items)) stop.abort();
  }
  return items;
}

const seqs = (items: FollowedEvent[]) => items.map((i) => (i.type === 'reset' ? `reset ${i.head}` : i.seq));

/** The InventoryApiError `promise` rejects with, after checking its status and code. */
async function apiError(promise: Promise<unknown>, status: number, code: string): Promise<InventoryApiError> {
  const error = await promise.then(
    () => assert.fail(`expected InventoryApiError ${status} ${code}, got a success`),
    (e: unknown) => e,
  );
  assert.ok(error instanceof InventoryApiError, `expected InventoryApiError, got ${String(error)}`);
  assert.equal(error.status, status, error.message);
  assert.equal(error.code, code, error.message);
  return error;
}

describe('typed client: change events without a service', () => {
  const baseUrl = 'http://inventory.invalid/v1';

  test('followEvents reconnects after a cut with Last-Event-ID, drops a repeat, yields a reset, and ends cleanly on abort', async () => {
    const requests: Request[] = [];
    const answers = [
      (r: Request) => streamAnswer(r, ['retry: 1000\n\n', sseEvent(6), sseEvent(7, INT64_MIN, 'inventory.created')]),
      (r: Request) => streamAnswer(r, [': keep-alive\n\n', sseEvent(7), sseEvent(8), 'event: reset\ndata: {"head":20}\n\n', sseEvent(21)], { open: true }),
    ];
    const { sleeps, sleep } = recordedSleep();
    const statuses: FollowStatus[] = [];
    const client = createInventoryClient({
      baseUrl,
      apiKey: 'inv_live_k',
      retries: { sleep, random: () => 0, baseDelayMs: 100 },
      fetch: (request) => (requests.push(request), Promise.resolve(answers[requests.length - 1]!(request))),
    });
    const items = await follow(client, (got) => got.length === 5, { after: 5, onStatus: (s) => statuses.push(s) });
    assert.deepEqual(seqs(items), [6, 7, 8, 'reset 20', 21]);
    const created = items[1] as InventoryEvent;
    assert.equal(created.type, 'inventory.created');
    assert.equal(stock(created).petId, INT64_MIN);
    assert.equal(stock(items[0] as InventoryEvent).petId, ABOVE_SAFE, 'exact, a bigint');
    assert.deepEqual(items[0], {
      id: 'evt_6',
      seq: 6,
      type: 'inventory.updated',
      occurredAt: '2026-11-26T10:00:00.000Z',
      data: { petId: ABOVE_SAFE, status: 'available', previousQuantity: 1, quantity: 2, version: 6, reason: null, source: 'api', keyId: 'key_1', requestId: 'r-6' },
    });
    assert.deepEqual(
      requests.map((r) => [r.url, r.headers.get('last-event-id'), r.headers.get('accept'), r.headers.get('authorization')]),
      [
        [`${baseUrl}/events/stream`, '5', 'text/event-stream', 'Bearer inv_live_k'],
        [`${baseUrl}/events/stream`, '7', 'text/event-stream', 'Bearer inv_live_k'],
      ],
    );
    assert.deepEqual(sleeps, [50], 'one back-off, half of 100 ms with random() = 0');
    assert.deepEqual(
      statuses.map((s) => (s.state === 'live' ? `live ${s.after}` : `reconnecting ${s.attempt} ${s.delayMs}`)),
      ['live 5', 'reconnecting 1 50', 'live 7'],
    );
    assert.ok(requests[1]!.signal.aborted, 'the open stream is closed on abort');
  });

  test('without after, the head is read first (a 410 carries it too), so a cut before the first event resumes there', async () => {
    const requests: Request[] = [];
    const { sleep } = recordedSleep();
    const client = createInventoryClient({
      baseUrl,
      apiKey: 'k',
      retries: { sleep },
      fetch: (request) => {
        requests.push(request);
        const path = new URL(request.url).pathname + new URL(request.url).search;
        if (path === '/v1/events?limit=1') {
          return Promise.resolve(Response.json({ code: 'events_pruned', message: 'pruned', status: 410 }, { status: 410, headers: { 'x-events-head': '12' } }));
        }
        return Promise.resolve(requests.length === 2 ? streamAnswer(request, ['retry: 1000\n\n']) : streamAnswer(request, [sseEvent(13)], { open: true }));
      },
    });
    assert.deepEqual(seqs(await follow(client, (got) => got.length === 1)), [13]);
    assert.deepEqual(
      requests.map((r) => [new URL(r.url).pathname, r.headers.get('last-event-id')]),
      [
        ['/v1/events', null],
        ['/v1/events/stream', '12'],
        ['/v1/events/stream', '12'],
      ],
    );
  });

  test('a 503 is tried again after its Retry-After; a 401 ends the iteration with InventoryApiError; a 200 that is no stream is unexpected_response', async () => {
    let calls = 0;
    const { sleeps, sleep } = recordedSleep();
    const refusing = createInventoryClient({
      baseUrl,
      apiKey: 'k',
      retries: { sleep },
      fetch: () =>
        Promise.resolve(
          ++calls === 1
            ? Response.json({ code: 'service_unavailable', message: 'too many streams', status: 503 }, { status: 503, headers: { 'retry-after': '2' } })
            : Response.json({ code: 'unauthorized', message: 'Missing or invalid API key', status: 401 }, { status: 401, headers: { 'x-request-id': 'r-401' } }),
        ),
    });
    const error = await apiError(follow(refusing, () => false, { after: 0 }), 401, 'unauthorized');
    assert.equal(error.requestId, 'r-401');
    assert.deepEqual(sleeps, [2000]);

    const html = createInventoryClient({ baseUrl, apiKey: 'k', fetch: () => Promise.resolve(new Response('<html>login</html>', { headers: { 'content-type': 'text/html' } })) });
    await apiError(follow(html, () => false, { after: 0 }), 200, 'unexpected_response');
  });

  test('a connection silent past idleTimeoutMs is taken as cut and opened again', async () => {
    const requests: Request[] = [];
    const { sleep } = recordedSleep();
    const client = createInventoryClient({
      baseUrl,
      apiKey: 'k',
      retries: { sleep },
      fetch: (request) => (requests.push(request), Promise.resolve(streamAnswer(request, requests.length === 1 ? [] : [sseEvent(3)], { open: true }))),
    });
    const statuses: FollowStatus[] = [];
    assert.deepEqual(seqs(await follow(client, (got) => got.length === 1, { after: 2, idleTimeoutMs: 50, onStatus: (s) => statuses.push(s) })), [3]);
    assert.equal(requests.length, 2);
    const cut = statuses.find((s) => s.state === 'reconnecting');
    assert.match(String(cut?.state === 'reconnecting' && cut.error), /silent for 50 ms/);
  });

  test('a body that never hears the abort is cancelled: the silence timer and the caller\'s abort still end its read', async () => {
    let calls = 0;
    const client = createInventoryClient({
      baseUrl,
      apiKey: 'k',
      retries: { sleep: recordedSleep().sleep },
      fetch: (request) => Promise.resolve(streamAnswer(request, ++calls === 1 ? [] : [sseEvent(3)], { open: true, deaf: true })),
    });
    assert.deepEqual(seqs(await follow(client, (got) => got.length === 1, { after: 2, idleTimeoutMs: 50 })), [3]);
    assert.equal(calls, 2, 'the silent one was given up, the next one read; the abort ended the loop');
  });

  test('an abort before the start yields nothing and sends nothing; break closes the connection', async () => {
    const requests: Request[] = [];
    const client = createInventoryClient({ baseUrl, apiKey: 'k', fetch: (r) => (requests.push(r), Promise.resolve(streamAnswer(r, [sseEvent(1), sseEvent(2)], { open: true }))) });
    const aborted = AbortSignal.abort();
    for await (const item of client.followEvents({ after: 0, signal: aborted })) assert.fail(`yielded ${String(item.type)}`);
    assert.equal(requests.length, 0);
    for await (const item of client.followEvents({ after: 0 })) {
      assert.equal(item.type === 'reset' ? 0 : item.seq, 1);
      break;
    }
    assert.ok(requests[0]!.signal.aborted, 'the stream is closed when the loop is left');
  });

  test('listEvents sends after and limit, returns the items (bigint petIds) and the head; a 410 carries code events_pruned and the head', async () => {
    const urls: string[] = [];
    let answer = () => new Response(`{"items":[${sseEvent(4).split('data: ')[1]!.trim()}]}`, { headers: { 'content-type': 'application/json', 'x-events-head': '9' } });
    const client = createInventoryClient({ baseUrl, apiKey: 'k', fetch: (r) => (urls.push(r.url), Promise.resolve(answer())) });
    const page = await client.listEvents({ after: 3, limit: 1 });
    assert.equal(page.head, 9);
    assert.equal(stock(page.items[0]!).petId, ABOVE_SAFE);
    assert.equal(page.items[0]!.seq, 4);
    await client.listEvents();
    assert.deepEqual(urls, [`${baseUrl}/events?after=3&limit=1`, `${baseUrl}/events`]);

    answer = () => Response.json({ code: 'events_pruned', message: 'Reload the list', status: 410 }, { status: 410, headers: { 'x-events-head': '70' } });
    const error = await apiError(client.listEvents({ after: 1 }), 410, 'events_pruned');
    assert.equal(error.eventsHead, 70);
    answer = () => Response.json({ items: [] });
    await apiError(client.listEvents(), 200, 'unexpected_response');
  });
});

function clientFor(api: TestApp, options: Partial<InventoryClientOptions> = {}) {
  return createInventoryClient({ baseUrl: `${api.baseUrl}/v1`, apiKey: api.keys.read, ...options });
}

/**
 * A fetch whose first stream breaks right after its first event (the connection drops, as a
 * network cut or an instance that dies would): the client must resume without a gap or a double.
 */
function cutAfterFirstEvent(): { fetch: (request: Request) => Promise<Response>; cuts: () => number } {
  let cuts = 0;
  let streams = 0;
  const fetch = async (request: Request): Promise<Response> => {
    const response = await globalThis.fetch(request);
    if (!request.url.endsWith('/events/stream') || ++streams > 1 || !response.body) return response;
    let seen = '';
    const reader = response.body.getReader();
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const { done, value } = (await reader.read()) as { done: boolean; value?: Uint8Array };
        if (done) return controller.close();
        controller.enqueue(value!);
        seen += new TextDecoder().decode(value);
        if (/^id: /m.test(seen)) {
          cuts++;
          await reader.cancel();
          controller.error(new TypeError('terminated (test: the connection dropped)'));
        }
      },
    });
    return new Response(body, { status: response.status, headers: response.headers });
  };
  return { fetch, cuts: () => cuts };
}

for (const backend of BACKENDS) {
  describe(`typed client: change events on ${backend}`, { skip: await backendSkip(backend) }, () => {
    const PETS = [
      { petId: ABOVE_SAFE, quantity: 7, status: 'available' as const },
      { petId: INT64_MIN, quantity: 1, status: 'sold' as const },
    ];

    test('listEvents pages the log with bigint petIds, exactly the feed; the head is X-Events-Head; after the head, empty', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PETS });
      const writer = clientFor(api, { apiKey: api.keys.write });
      for (const quantity of [8, 9, 10]) await writer.updateInventory(ABOVE_SAFE, { quantity, reason: 'received' });
      const client = clientFor(api);
      const all = await client.listEvents({ limit: 1000 });
      assert.equal(all.head, all.items.at(-1)!.seq);
      const facts = all.items.map((e) => [e.type, stock(e).petId, stock(e).previousQuantity, stock(e).quantity]);
      // The two entries are created in one write, in an order of the store's choosing.
      assert.deepEqual(
        facts.slice(0, 2).sort((a, b) => (a[1]! < b[1]! ? -1 : 1)),
        [
          ['inventory.created', INT64_MIN, null, 1],
          ['inventory.created', ABOVE_SAFE, null, 7],
        ],
      );
      assert.deepEqual(facts.slice(2), [
        ['inventory.updated', ABOVE_SAFE, 7, 8],
        ['inventory.updated', ABOVE_SAFE, 8, 9],
        ['inventory.updated', ABOVE_SAFE, 9, 10],
      ]);
      const feed = await api.request({ method: 'GET', url: '/v1/events?limit=1000', key: api.keys.read });
      assert.deepEqual(all.items.map((e) => e.id), feed.json<{ items: { id: string }[] }>().items.map((e) => e.id));
      assert.equal(String(all.head), feed.headers['x-events-head']);
      const updated = all.items.find((e) => e.type === 'inventory.updated')!;
      assert.equal(stock(updated).reason, 'received');
      assert.equal(updated.data.source, 'api');

      const pages: number[][] = [];
      let after = 0;
      for (;;) {
        const page = await client.listEvents({ after, limit: 2 });
        if (page.items.length === 0) break;
        pages.push(page.items.map((e) => e.seq));
        after = page.items.at(-1)!.seq;
      }
      assert.deepEqual(pages.flat(), all.items.map((e) => e.seq));
      assert.deepEqual(pages.map((p) => p.length), [2, 2, 1]);
      assert.deepEqual((await client.listEvents({ after: all.head })).items, []);
      await apiError(clientFor(api, { apiKey: 'inv_live_not-a-key' }).listEvents(), 401, 'unauthorized');
      await apiError(client.listEvents({ limit: 0 }), 400, 'invalid_parameter');
    });

    test('followEvents streams changes as they commit; a cut connection resumes with Last-Event-ID, no gap and no double', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PETS });
      const writer = clientFor(api, { apiKey: api.keys.write });
      const cutter = cutAfterFirstEvent();
      const statuses: FollowStatus[] = [];
      const client = clientFor(api, { fetch: cutter.fetch, retries: { baseDelayMs: 10 } });
      const { head } = await client.listEvents();
      const want = 6;
      const following = follow(client, (got) => got.length === want, { after: head, onStatus: (s) => statuses.push(s) });
      for (let q = 20; q < 20 + want; q++) await writer.updateInventory(q % 2 ? INT64_MIN : ABOVE_SAFE, { quantity: q });
      const items = (await following) as InventoryEvent[];
      assert.equal(cutter.cuts(), 1, 'the first stream was cut');
      assert.ok(statuses.some((s) => s.state === 'reconnecting'), 'and opened again');
      const logged = await client.listEvents({ after: head });
      assert.deepEqual(items, logged.items, 'every event once, in order, as the feed has them');
      assert.deepEqual(items.map((e) => [stock(e).petId, stock(e).quantity]), [20, 21, 22, 23, 24, 25].map((q) => [q % 2 ? INT64_MIN : ABOVE_SAFE, q]));
    });

    test('followEvents from a pruned position yields a reset with the head, then goes on from it; listEvents answers 410 with the head', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PETS });
      const writer = clientFor(api, { apiKey: api.keys.write });
      await writer.updateInventory(ABOVE_SAFE, { quantity: 1 });
      await writer.updateInventory(ABOVE_SAFE, { quantity: 2 });
      await new Promise((resolve) => setTimeout(resolve, 5));
      assert.ok((await api.store.events.purgeEvents(new Date())) > 0);
      const head = await api.store.events.head();
      const client = clientFor(api);
      const error = await apiError(client.listEvents({ after: 1 }), 410, 'events_pruned');
      assert.equal(error.eventsHead, head);
      const stop = new AbortController();
      const stream = client.followEvents({ after: 1, signal: stop.signal });
      assert.deepEqual((await stream.next()).value, { type: 'reset', head });
      await writer.updateInventory(ABOVE_SAFE, { quantity: 3 });
      const next = (await stream.next()).value as InventoryEvent;
      stop.abort();
      assert.deepEqual(await stream.next(), { done: true, value: undefined }, 'ended by the abort');
      assert.equal(stock(next).quantity, 3);
      assert.ok(next.seq > head);
    });

    test('beyond the head (a rebuilt store): followEvents yields a reset with the head, then goes on from it; listEvents answers 409 events_beyond_head with the head', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PETS });
      const writer = clientFor(api, { apiKey: api.keys.write });
      await writer.updateInventory(ABOVE_SAFE, { quantity: 1 });
      const head = await api.store.events.head();
      const client = clientFor(api);
      const error = await apiError(client.listEvents({ after: head + 50 }), 409, 'events_beyond_head');
      assert.equal(error.eventsHead, head);
      const stop = new AbortController();
      const stream = client.followEvents({ after: head + 50, signal: stop.signal });
      assert.deepEqual((await stream.next()).value, { type: 'reset', head });
      await writer.updateInventory(ABOVE_SAFE, { quantity: 2 });
      const next = (await stream.next()).value as InventoryEvent;
      stop.abort();
      assert.deepEqual(await stream.next(), { done: true, value: undefined }, 'ended by the abort');
      assert.equal(stock(next).quantity, 2);
      assert.equal(next.seq, head + 1);
    });

    test('followEvents with a refused key ends with InventoryApiError 401 unauthorized', async (t) => {
      const api = await buildTestApp(t, { backend, transport: 'http', items: PETS });
      await apiError(follow(clientFor(api, { apiKey: 'inv_live_not-a-key' }), () => false, { after: 0 }), 401, 'unauthorized');
      await apiError(follow(clientFor(api, { apiKey: 'inv_live_not-a-key' }), () => false), 401, 'unauthorized');
    });
  });
}
