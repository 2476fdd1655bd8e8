import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import { DISABLED_EXHAUSTED, DISABLED_GONE, type WebhookEndpoint } from '../../src/domain/webhook.js';
import { newEndpointId, newWebhookSecret } from '../../src/webhooks/secret.js';
import { buildTestApp, type TestApp } from '../support/app.js';
import { BACKENDS, backendSkip } from '../support/backends.js';
import { startReceiver, type Receiver } from '../support/webhook-receiver.js';
import { until } from '../support/process.js';

const PET = { petId: 1n, quantity: 0, status: 'available' as const };

/** An app that may deliver to local receivers, with the waits of `schedule`. */
async function deliveringApp(t: TestContext, backend: (typeof BACKENDS)[number], config: Record<string, string> = {}): Promise<TestApp> {
  return buildTestApp(t, {
    backend,
    items: [PET],
    config: { WEBHOOKS_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_SCHEDULE: '30ms,30ms,30ms', WEBHOOK_TIMEOUT_MS: '2000', ...config },
  });
}

/** Adds an endpoint for `receiver` and has the app's dispatcher claim it at once. */
async function endpointFor(api: TestApp, receiver: Receiver): Promise<WebhookEndpoint> {
  const endpoint = await api.store.webhookEndpoints.addEndpoint({ id: newEndpointId(), url: receiver.url, description: 'test receiver', secret: newWebhookSecret(), createdAt: new Date() });
  await api.app.webhookDispatcher.leaseNow();
  return endpoint;
}

/** Sets pet 1's quantity through the API, `count` times from `from`. */
async function patches(api: TestApp, from: number, count: number): Promise<void> {
  for (let q = from; q < from + count; q++) {
    const res = await api.request({ method: 'PATCH', url: '/v1/inventory/1', key: api.keys.write, body: { quantity: q } });
    assert.equal(res.status, 200);
  }
}

/** The feed's events after `after`, as JSON text by id. */
async function feed(api: TestApp, after: number): Promise<{ id: string; seq: number }[]> {
  const res = await api.request({ method: 'GET', url: `/v1/events?after=${after}&limit=1000`, key: api.keys.read });
  return res.json<{ items: { id: string; seq: number }[] }>().items;
}

const quantities = (receiver: Receiver) => receiver.received.map((r) => r.json.data.quantity);

/** How long a wait goes on before the test gives up: a deadline on waiting for what must happen, never a measure of speed. */
const LIVENESS_MS = 60_000;

/** The endpoint as stored once `condition` holds for it. */
async function storedWhen(api: TestApp, id: string, condition: (e: WebhookEndpoint) => boolean): Promise<WebhookEndpoint> {
  let stored: WebhookEndpoint | undefined;
  await until(async () => ((stored = await api.store.webhookEndpoints.getEndpoint(id)) !== undefined && condition(stored)), `endpoint ${id} as expected`, { timeoutMs: LIVENESS_MS });
  return stored!;
}

for (const backend of BACKENDS) {
  describe(`webhook deliveries on ${backend}`, { skip: await backendSkip(backend) }, () => {
    test('a receiver verifying with the reference library gets every event, in order, one at a time, the body the feed\'s', async (t) => {
      const receiver = await startReceiver(t);
      const api = await deliveringApp(t, backend);
      const endpoint = await endpointFor(api, receiver);
      await patches(api, 1, 25);
      await receiver.waitFor(25);
      assert.deepEqual(quantities(receiver), Array.from({ length: 25 }, (_, i) => i + 1));
      assert.equal(receiver.concurrency.max, 1, 'the next is sent only after the one before was answered');
      const events = await feed(api, endpoint.deliveredSeq);
      assert.deepEqual(receiver.received.map((r) => r.headers['webhook-id']), events.map((e) => e.id));
      assert.deepEqual(receiver.received.map((r) => JSON.parse(r.body) as unknown), events, 'the same objects as the feed');
      for (const request of receiver.received) {
        assert.ok(receiver.verifies(request, endpoint.secret), 'standardwebhooks accepts it');
        assert.equal(request.headers['content-type'], 'application/json');
        assert.match(String(request.headers['webhook-timestamp']), /^\d{10}$/);
      }
      assert.equal(receiver.verifies({ ...receiver.received[0]!, body: receiver.received[0]!.body.replace('"quantity":1', '"quantity":9') }, endpoint.secret), false);
      await storedWhen(api, endpoint.id, (e) => e.deliveredSeq === events.at(-1)!.seq);
    });

    test('a 500, a timeout and a refused connection are retried with the same webhook-id; the log has each attempt', async (t) => {
      const receiver = await startReceiver(t);
      // After the first, retries a second apart for 49 s: the refused ones go on until the receiver listens again, however
      // long a loaded machine takes to get there.
      const api = await deliveringApp(t, backend, { WEBHOOK_TIMEOUT_MS: '300', WEBHOOK_RETRY_SCHEDULE: ['30ms', ...Array<string>(49).fill('1s')].join(',') });
      const endpoint = await endpointFor(api, receiver);
      receiver.answer = (_r, i) => (i === 0 ? { status: 500 } : i === 1 ? 'hang' : { status: 200 });
      await patches(api, 1, 1);
      await receiver.waitFor(2);
      // The third attempt finds nobody listening (refused), the fourth a receiver again. The receiver stops listening the
      // moment the sender gives up on the second (its connection closes at the timeout), a second before the third can come:
      // the test and the sender share one event loop, so no timer of the sender's runs in between, however loaded the machine.
      await receiver.received[1]!.closed;
      await receiver.close();
      const refusedAfter = Date.now();
      const log = () => api.store.webhookEndpoints.listDeliveries(endpoint.id, 10);
      await until(async () => (await log()).some((a) => a.error !== null && a.attemptedAt.getTime() >= refusedAfter && !/timed out/.test(a.error)), 'a refused attempt logged', { timeoutMs: LIVENESS_MS });
      await receiver.listen();
      await receiver.waitFor(3);
      await patches(api, 2, 1);
      await receiver.waitFor(4);
      const ids = receiver.received.map((r) => r.headers['webhook-id']);
      assert.equal(ids[0], ids[1]);
      assert.equal(ids[1], ids[2]);
      assert.notEqual(ids[2], ids[3]);
      assert.deepEqual(quantities(receiver), [1, 1, 1, 2]);
      await until(async () => (await log()).filter((a) => a.status === 200).length === 2, 'two attempts answered 200', { timeoutMs: LIVENESS_MS });
      const attempts = (await log()).reverse();
      assert.equal(attempts[0]!.status, 500);
      assert.match(attempts[1]!.error ?? '', /timed out/);
      const refused = attempts.slice(2, -2);
      assert.ok(refused.length >= 1 && refused.every((a) => a.status === null && a.error !== null && !/timed out/.test(a.error)), JSON.stringify(refused));
      assert.deepEqual(attempts.slice(-2).map((a) => a.status), [200, 200]);
      assert.ok(attempts.slice(0, -1).every((a) => a.eventId === ids[0]));
      // Recorded once the second event's delivery is flushed: no failures left, the last one still shown.
      await storedWhen(api, endpoint.id, (e) => e.failures === 0 && e.nextAttemptAt === null && e.lastFailure !== null);
    });

    test('a 429 with Retry-After waits that long, not the schedule\'s wait', async (t) => {
      const receiver = await startReceiver(t);
      const api = await deliveringApp(t, backend, { WEBHOOK_RETRY_SCHEDULE: '10ms,10ms' });
      await endpointFor(api, receiver);
      receiver.answer = (_r, i) => (i === 0 ? { status: 429, headers: { 'retry-after': '1' } } : { status: 200 });
      await patches(api, 1, 1);
      await receiver.waitFor(2);
      const [first, second] = receiver.received;
      assert.equal(first!.headers['webhook-id'], second!.headers['webhook-id']);
      assert.ok(second!.at - first!.at >= 1000, `waited ${second!.at - first!.at} ms`);
    });

    test('a 410 disables the endpoint at once; it keeps its place, and enable resumes from it', async (t) => {
      const receiver = await startReceiver(t);
      const api = await deliveringApp(t, backend);
      const endpoint = await endpointFor(api, receiver);
      receiver.answer = () => ({ status: 410 });
      await patches(api, 1, 1);
      await receiver.waitFor(1);
      const stored = await storedWhen(api, endpoint.id, (e) => !e.enabled);
      assert.equal(stored.disabledReason, DISABLED_GONE);
      assert.equal(stored.deliveredSeq, endpoint.deliveredSeq, 'nothing was delivered');
      await patches(api, 2, 2);
      await api.app.webhookDispatcher.leaseNow();
      assert.deepEqual(api.app.webhookDispatcher.endpoints, [], 'a disabled endpoint is not delivered to');
      assert.equal(receiver.received.length, 1);
      assert.ok(api.logs().some((l) => l.msg === 'webhook endpoint disabled' && l.reason === DISABLED_GONE), 'one line for the change of state');
      receiver.answer = () => ({ status: 200 });
      assert.equal(await api.store.webhookEndpoints.enableEndpoint(endpoint.id), true);
      await api.app.webhookDispatcher.leaseNow();
      await receiver.waitFor(4);
      assert.deepEqual(quantities(receiver), [1, 1, 2, 3]);
    });

    test('the schedule used up disables the endpoint; enable resumes with nothing lost; the secret is in no log line', async (t) => {
      const receiver = await startReceiver(t);
      const api = await deliveringApp(t, backend, { WEBHOOK_RETRY_SCHEDULE: '20ms,20ms' });
      const endpoint = await endpointFor(api, receiver);
      receiver.answer = () => ({ status: 500 });
      await patches(api, 1, 1);
      const stored = await storedWhen(api, endpoint.id, (e) => !e.enabled);
      assert.equal(stored.disabledReason, DISABLED_EXHAUSTED);
      assert.equal(receiver.received.length, 3, 'the first attempt and the two retries of the schedule');
      const failedLines = api.logs().filter((l) => l.msg === 'webhook delivery failed; it is tried again later');
      assert.equal(failedLines.length, 2, 'one line per failed attempt that is retried');
      await patches(api, 2, 3);
      receiver.answer = () => ({ status: 204 });
      await api.store.webhookEndpoints.enableEndpoint(endpoint.id);
      await api.app.webhookDispatcher.leaseNow();
      await receiver.waitFor(7);
      assert.deepEqual(quantities(receiver), [1, 1, 1, 1, 2, 3, 4]);
      const logText = JSON.stringify(api.logs());
      assert.ok(!logText.includes(endpoint.secret) && !logText.includes(endpoint.secret.slice(6)), 'the secret never reaches the log');
      // Seven deliveries and four failures: at info, only the changes of state (claimed, and claimed again after enable).
      const infoLines = api.logs().filter((l) => l.level === 30 && String(l.msg).startsWith('webhook'));
      assert.deepEqual(
        [...new Set(infoLines.map((l) => l.msg))],
        ['webhook endpoint: delivering from this instance'],
        'no line per success at info',
      );
      assert.equal(infoLines.length, 2, 'one when the endpoint was claimed, one when it was claimed again after enable');
    });

    test('after a rotation every delivery carries both signatures, each of which verifies, until the old secret expires', async (t) => {
      const receiver = await startReceiver(t);
      const api = await deliveringApp(t, backend);
      const endpoint = await endpointFor(api, receiver);
      const next = newWebhookSecret();
      await api.store.webhookEndpoints.rotateSecret(endpoint.id, next, new Date(Date.now() + 24 * 3600_000));
      await api.app.webhookDispatcher.leaseNow();
      await patches(api, 1, 1);
      await receiver.waitFor(1);
      const request = receiver.received[0]!;
      assert.equal(String(request.headers['webhook-signature']).split(' ').length, 2);
      assert.ok(receiver.verifies(request, endpoint.secret), 'the old secret verifies');
      assert.ok(receiver.verifies(request, next), 'the new secret verifies');
      await api.store.webhookEndpoints.rotateSecret(endpoint.id, newWebhookSecret(), new Date(Date.now() - 1));
      await api.app.webhookDispatcher.leaseNow();
      await patches(api, 2, 1);
      await receiver.waitFor(2);
      assert.equal(String(receiver.received[1]!.headers['webhook-signature']).split(' ').length, 1, 'the previous secret expired');
      assert.equal(receiver.verifies(receiver.received[1]!, next), false);
    });

    test('replayFrom resends every event after the given seq, in order, even while the endpoint is being delivered to', async (t) => {
      const receiver = await startReceiver(t);
      const api = await deliveringApp(t, backend);
      const endpoint = await endpointFor(api, receiver);
      await patches(api, 1, 3);
      await receiver.waitFor(3);
      await storedWhen(api, endpoint.id, (e) => e.deliveredSeq === endpoint.deliveredSeq + 3);
      assert.equal(await api.store.webhookEndpoints.replayFrom(endpoint.id, endpoint.deliveredSeq + 1), true);
      await api.app.webhookDispatcher.leaseNow();
      await receiver.waitFor(5);
      await patches(api, 4, 1);
      await receiver.waitFor(6);
      assert.deepEqual(quantities(receiver), [1, 2, 3, 2, 3, 4], 'the events after the seq again, then what follows');
      assert.equal(receiver.concurrency.max, 1);
    });

    test('an attempt answered after the operator disabled the endpoint is in its delivery log', async (t) => {
      const receiver = await startReceiver(t);
      const api = await deliveringApp(t, backend);
      const endpoint = await endpointFor(api, receiver);
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      receiver.answer = (_r, i) => (i === 0 ? { status: 204, until: released } : { status: 204 });
      await patches(api, 1, 1);
      await receiver.waitFor(1);
      await api.store.webhookEndpoints.disableEndpoint(endpoint.id, 'test');
      await api.app.webhookDispatcher.leaseNow();
      release();
      const log = () => api.store.webhookEndpoints.listDeliveries(endpoint.id, 10);
      await until(async () => (await log()).length === 1, 'the attempt logged', { timeoutMs: LIVENESS_MS });
      const [sent] = await log();
      assert.deepEqual([sent!.eventId, sent!.status], [receiver.received[0]!.headers['webhook-id'], 204]);
      assert.equal((await api.store.webhookEndpoints.getEndpoint(endpoint.id))!.deliveredSeq, endpoint.deliveredSeq, 'no progress recorded once disabled');
      // Enabled again, it resumes from its recorded place: the event is sent again (at least once), and logged again.
      await api.store.webhookEndpoints.enableEndpoint(endpoint.id);
      await api.app.webhookDispatcher.leaseNow();
      await receiver.waitFor(2);
      assert.equal(receiver.received[1]!.headers['webhook-id'], sent!.eventId);
      await until(async () => (await log()).length === 2, 'the second attempt logged', { timeoutMs: LIVENESS_MS });
    });

    test('an endpoint behind the retention gets webhook.reset with the head, then what follows', async (t) => {
      const receiver = await startReceiver(t);
      const api = await deliveringApp(t, backend);
      const endpoint = await endpointFor(api, receiver);
      await api.store.webhookEndpoints.disableEndpoint(endpoint.id, 'test');
      await api.app.webhookDispatcher.leaseNow();
      await patches(api, 1, 3);
      await new Promise((r) => setTimeout(r, 5));
      assert.ok((await api.store.events.purgeEvents(new Date())) > 0);
      const head = await api.store.events.head();
      await api.store.webhookEndpoints.enableEndpoint(endpoint.id);
      await api.app.webhookDispatcher.leaseNow();
      await receiver.waitFor(1);
      await patches(api, 4, 1);
      await receiver.waitFor(2);
      const [reset, next] = receiver.received;
      assert.equal(reset!.json.type, 'webhook.reset');
      assert.equal(reset!.json.data.head, head);
      assert.ok(receiver.verifies(reset!, endpoint.secret));
      assert.equal(next!.json.type, 'inventory.updated');
      assert.equal(next!.json.data.quantity, 4);
    });
  });
}
