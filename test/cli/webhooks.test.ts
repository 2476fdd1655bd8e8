import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, test, type TestContext } from 'node:test';
import { DISABLED_BY_OPERATOR } from '../../src/domain/webhook.js';
import { answerListWebhooks } from '../../src/operations/list-webhooks.js';
import { openStore } from '../../src/store/open.js';
import { BACKENDS, backendSkip, createTestDatabase } from '../support/backends.js';
import { buildTestApp } from '../support/app.js';
import { runCli, type Run } from '../support/cli.js';

/** `webhooks` in-process on each backend: every subcommand, its --json, the secret shown only by add and rotate-secret. */

const SECRET = /whsec_[A-Za-z0-9+/]{43}=/;
const ID = /^whk_[A-Za-z0-9_-]{22}$/;
const PRIVATE = { WEBHOOKS_ALLOW_PRIVATE: 'true' };

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

/** A receiver on loopback answering `status()` to every POST, keeping what it got; closed when the test ends. */
async function receiver(t: TestContext, status: () => number): Promise<{ url: string; received: Received[] }> {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      res.writeHead(status(), { 'content-type': 'text/plain' }).end('thanks');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, received };
}

/** The reference verifier when the project has it; undefined otherwise (then only the check by hand runs). */
async function referenceVerifier(): Promise<((secret: string, body: string, headers: Record<string, string>) => unknown) | undefined> {
  const name = 'standardwebhooks';
  try {
    const { Webhook } = (await import(name)) as { Webhook: new (secret: string) => { verify(body: string, headers: Record<string, string>): unknown } };
    return (secret, body, headers) => new Webhook(secret).verify(body, headers);
  } catch {
    return undefined;
  }
}

/** Whether one of the `v1,` signatures of a delivery is the HMAC-SHA256 of id.timestamp.body keyed with the secret's bytes. */
function signedWith(secret: string, delivery: Received): boolean {
  const id = String(delivery.headers['webhook-id']);
  const timestamp = String(delivery.headers['webhook-timestamp']);
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const expected = `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${delivery.body}`).digest('base64')}`;
  return String(delivery.headers['webhook-signature']).split(' ').includes(expected);
}

async function assertVerified(secret: string, delivery: Received): Promise<void> {
  assert.ok(signedWith(secret, delivery), 'signed with the secret');
  const verify = await referenceVerifier();
  if (verify) {
    const headers = Object.fromEntries(Object.entries(delivery.headers).map(([k, v]) => [k, String(v)]));
    assert.doesNotThrow(() => verify(secret, delivery.body, headers), 'the standardwebhooks package accepts it');
  }
}

function assertFailed(r: Run, code: number, message: RegExp): void {
  assert.equal(r.code, code, `exit code; stderr: ${r.err}`);
  assert.equal(r.out, '');
  assert.match(r.err, message);
  assert.match(r.err, /^petstore-inventory: [^\n]*\n$/);
}

for (const backend of BACKENDS) {
  describe(`webhooks CLI on ${backend}`, { skip: await backendSkip(backend) }, () => {
    /** A fresh store; `run` is the CLI with its DATABASE_URL and `env`. */
    async function sandbox(t: TestContext, env: Record<string, string> = PRIVATE) {
      const db = await createTestDatabase(backend, t);
      // An empty store where DATABASE_URL points: the commands that only read never create one.
      await db.open();
      const run = (...argv: string[]) => runCli({ DATABASE_URL: db.databaseUrl, ...env }, ...argv);
      return { db, run };
    }

    test('add prints the id and the secret once; list shows the endpoint and its backlog, never the secret; --json shapes', async (t) => {
      const { db, run } = await sandbox(t);
      const added = await run('webhooks', 'add', '--url', 'http://127.0.0.1:9/till', '--description', 'the till');
      assert.equal(added.code, 0, added.err);
      const secret = SECRET.exec(added.out)?.[0];
      assert.ok(secret, added.out);
      assert.equal(added.out.split(secret).length, 2, 'the secret is printed once');
      assert.match(added.out, /^Signing secret: whsec_\S+\n/m);
      assert.match(added.out, /will not be shown again/);
      const id = /endpoint (whk_\S+) for http:\/\/127\.0\.0\.1:9\/till/.exec(added.out)?.[1];
      assert.match(id ?? '', ID);

      const json = await run('webhooks', 'add', '--url', 'http://127.0.0.1:9/shop', '--json');
      assert.equal(json.code, 0, json.err);
      const last = JSON.parse(json.out.trimEnd().split('\n').at(-1)!) as Record<string, unknown>;
      assert.deepEqual(Object.keys(last), ['id', 'url', 'secret', 'enabled', 'maxInFlight']);
      assert.equal(last.maxInFlight, 16, 'a new endpoint gets 16 unless told');
      assert.match(String(last.id), ID);
      assert.equal(last.url, 'http://127.0.0.1:9/shop');
      assert.match(String(last.secret), new RegExp(`^${SECRET.source}$`));
      assert.equal(last.enabled, true);
      assert.match(json.err, /will not be shown again/);
      assert.ok(!json.err.includes(String(last.secret)));

      // Three events after both were added: each has a backlog of three.
      for (const petId of ['1', '2', '3']) assert.equal((await run('pets', 'add', '--pet-id', petId, '--status', 'available')).code, 0);

      const table = await run('webhooks', 'list');
      assert.equal(table.code, 0, table.err);
      const lines = table.out.trimEnd().split('\n');
      assert.match(lines[0]!, /^ID\s+URL\s+STATE\s+IN FLIGHT\s+DELIVERED\s+BACKLOG\s+LAST FAILURE$/);
      assert.match(lines[1]!, new RegExp(`^${id}\\s+http://127\\.0\\.0\\.1:9/till\\s+enabled\\s+at most 16\\s+0\\s+3\\s+-$`));
      assert.match(lines[2]!, new RegExp(`^${String(last.id)}\\s+http://127\\.0\\.0\\.1:9/shop\\s+enabled\\s+at most 16\\s+0\\s+3\\s+-$`));

      const listed = await run('webhooks', 'list', '--json');
      assert.equal(listed.code, 0, listed.err);
      const store = await openStore(db.databaseUrl);
      t.after(() => store.close());
      assert.equal(listed.out, `${String((await answerListWebhooks(store)).body)}\n`, 'what GET /v1/webhooks answers');
      const body = JSON.parse(listed.out) as { items: Record<string, unknown>[]; head: number };
      assert.equal(body.head, 3);
      assert.deepEqual(
        body.items.map((e) => [e.id, e.description, e.enabled, e.deliveredSeq, e.backlog, e.lastFailure]),
        [
          [id, 'the till', true, 0, 3, null],
          [last.id, null, true, 0, 3, null],
        ],
      );
      for (const out of [table.out, listed.out, table.err, listed.err]) assert.doesNotMatch(out, /whsec_/);
    });

    test('list shows the last failure only while no attempt succeeded since it; --json keeps it, as GET /v1/webhooks does', async (t) => {
      const { db, run } = await sandbox(t);
      const added = await run('webhooks', 'add', '--url', 'http://127.0.0.1:9/till');
      const id = /endpoint (whk_\S+) for/.exec(added.out)![1]!;
      for (const petId of ['1', '2']) assert.equal((await run('pets', 'add', '--pet-id', petId, '--status', 'available')).code, 0);
      const store = await openStore(db.databaseUrl);
      t.after(() => store.close());
      const [leased] = await store.webhookDeliveries.leaseEndpoints('holder', 60_000);
      assert.equal(leased?.id, id);
      const attempt = (seq: number, at: Date, status: number | null) => ({ endpointId: id, eventId: `evt_${seq}`, seq, attemptedAt: at, status, error: status === null ? 'ECONNREFUSED' : null, durationMs: 3, responseBody: null });
      const failedAt = new Date(Date.now() - 60_000);
      const lastFailureColumn = async () => {
        const listed = await run('webhooks', 'list');
        assert.equal(listed.code, 0, listed.err);
        return listed.out.trimEnd().split('\n')[1]!.split(/\s{2,}/).at(-1);
      };
      const jsonFailure = async () => {
        const [item] = (JSON.parse((await run('webhooks', 'list', '--json')).out) as { items: { lastFailure: string | null; failures: number }[] }).items;
        return { lastFailure: item?.lastFailure, failures: item?.failures };
      };

      // The receiver failed: the table and --json show it.
      const failing = { deliveredSeq: 0, deliveredAbove: [], retrying: [], failures: 1, nextAttemptAt: new Date(Date.now() + 5000), lastFailureAt: failedAt, lastFailure: 'HTTP 500' };
      assert.equal(await store.webhookDeliveries.recordProgress(id, 'holder', { ...failing, attempts: [attempt(1, failedAt, 500)] }, leased.leaseClaimedAt), true);
      assert.equal(await lastFailureColumn(), `${failedAt.toISOString().replace(/\.\d{3}Z$/, 'Z')} HTTP 500`);
      assert.deepEqual(await jsonFailure(), { lastFailure: 'HTTP 500', failures: 1 });

      // Healthy again: both events delivered since. The table no longer shows the old failure; --json keeps it, failures 0.
      const healthy = { deliveredSeq: 2, deliveredAbove: [], retrying: [], failures: 0, nextAttemptAt: null, lastFailureAt: failedAt, lastFailure: 'HTTP 500' };
      const later = new Date(failedAt.getTime() + 5000);
      assert.equal(await store.webhookDeliveries.recordProgress(id, 'holder', { ...healthy, attempts: [attempt(1, later, 204), attempt(2, new Date(later.getTime() + 1), 204)] }, leased.leaseClaimedAt), true);
      assert.equal(await lastFailureColumn(), '-');
      assert.deepEqual(await jsonFailure(), { lastFailure: 'HTTP 500', failures: 0 });

      // Failing again: the new failure shows.
      assert.equal((await run('pets', 'add', '--pet-id', '3', '--status', 'available')).code, 0);
      const failedAgainAt = new Date(later.getTime() + 10_000);
      const again = { deliveredSeq: 2, deliveredAbove: [], retrying: [], failures: 1, nextAttemptAt: new Date(Date.now() + 5000), lastFailureAt: failedAgainAt, lastFailure: 'ECONNREFUSED' };
      assert.equal(await store.webhookDeliveries.recordProgress(id, 'holder', { ...again, attempts: [attempt(3, failedAgainAt, null)] }, leased.leaseClaimedAt), true);
      assert.match((await lastFailureColumn())!, /ECONNREFUSED$/);
    });

    test('a URL the guard refuses, or none, is a usage error (exit 2) and nothing is stored', async (t) => {
      const { run } = await sandbox(t, {});
      const cases: [string[], RegExp][] = [
        [['--url', 'https://127.0.0.1/hook'], /^petstore-inventory: --url is refused: 127\.0\.0\.1 is a private address .*WEBHOOKS_ALLOW_PRIVATE=true allows it\n/],
        [['--url', 'http://127.0.0.1/hook'], /^petstore-inventory: --url is refused: /],
        [['--url', 'https://localhost/hook'], /^petstore-inventory: --url is refused: localhost resolves to (127\.0\.0\.1|::1), a private/],
        [['--url', 'not a url'], /^petstore-inventory: --url is refused: /],
        [[], /needs --url URL/],
        [['--url', 'https://127.0.0.1/hook', '--description', 'a\nb'], /--description must not contain control characters/],
      ];
      for (const [args, message] of cases) assertFailed(await run('webhooks', 'add', ...args), 2, message);
      // The word is said once: the guard's reason carries no "refused" of its own.
      assert.equal(
        (await run('webhooks', 'add', '--url', 'https://127.0.0.1:9/x')).err,
        'petstore-inventory: --url is refused: 127.0.0.1 is a private address (loopback, private, link-local, multicast or unspecified); WEBHOOKS_ALLOW_PRIVATE=true allows it\n',
      );
      const credentials = await run('webhooks', 'add', '--url', 'https://user:hunter2@127.0.0.1/hook');
      assertFailed(credentials, 2, /--url is refused/);
      assert.ok(!credentials.err.includes('hunter2'), 'a password in the URL is not echoed');
      assert.match((await run('webhooks', 'list')).out, /^No webhook endpoints yet/);
    });

    test('WEBHOOKS_ALLOW_PRIVATE on the CLI alone: add warns that the servers need it too, and a server without it logs each refusal naming it', async (t) => {
      const { db, run } = await sandbox(t);
      const hook = await receiver(t, () => 204);
      const added = await run('webhooks', 'add', '--url', hook.url, '--json');
      assert.equal(added.code, 0, added.err);
      assert.ok(
        added.err.startsWith(
          'warning: a server without WEBHOOKS_ALLOW_PRIVATE=true refuses this URL: only https URLs are accepted (http too with WEBHOOKS_ALLOW_PRIVATE=true).\n' +
            'Every server that delivers webhooks needs WEBHOOKS_ALLOW_PRIVATE=true too; without it each delivery fails and is retried until the endpoint is disabled.\n',
        ),
        added.err,
      );
      const { id } = JSON.parse(added.out) as { id: string };

      // A server without the setting: every attempt is refused before it connects, and the log says which setting would allow it.
      const api = await buildTestApp(t, { databaseUrl: db.databaseUrl, items: [{ petId: 1n, quantity: 0, status: 'available' }], config: { WEBHOOK_RETRY_SCHEDULE: '1h' } });
      await api.app.webhookDispatcher.leaseNow();
      assert.equal((await api.request({ method: 'PATCH', url: '/v1/inventory/1', key: api.keys.write, body: { quantity: 1 } })).status, 200);
      while ((await api.store.webhookEndpoints.listDeliveries(id, 1)).length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
      const [attempt] = await api.store.webhookEndpoints.listDeliveries(id, 1);
      assert.equal(attempt!.status, null);
      assert.equal(attempt!.error, 'refused: only https URLs are accepted (http too with WEBHOOKS_ALLOW_PRIVATE=true)');
      assert.deepEqual(hook.received, [], 'nothing reached the receiver');
      const log = await run('webhooks', 'deliveries', id);
      assert.match(log.out, /only https URLs are accepted \(http too with WEBHOOKS_ALLOW_PRIVATE=true\)/);
    });

    test('an unknown id fails with exit 1 and "no webhook endpoint <id>" in every command that takes one', async (t) => {
      const { run } = await sandbox(t);
      for (const command of ['remove', 'disable', 'enable', 'test', 'deliveries', 'rotate-secret']) {
        assertFailed(await run('webhooks', command, 'whk_nope'), 1, /^petstore-inventory: no webhook endpoint whk_nope\b/);
        assertFailed(await run('webhooks', command), 2, /takes exactly one endpoint id/);
        const pasted = await run('webhooks', command, 'whsec_c2VjcmV0');
        assertFailed(pasted, 2, /that is a signing secret, not an endpoint id/);
        assert.ok(!pasted.err.includes('c2VjcmV0'), 'a pasted secret is not echoed');
      }
      assertFailed(await run('webhooks', 'update', 'whk_nope', '--max-in-flight', '4'), 1, /^petstore-inventory: no webhook endpoint whk_nope\b/);
      assertFailed(await run('webhooks', 'replay', 'whk_nope', '--from', '1'), 1, /^petstore-inventory: no webhook endpoint whk_nope\b/);
      assertFailed(await run('webhooks', 'frobnicate'), 2, /webhooks has no command "frobnicate"/);
      assertFailed(await run('webhooks', 'deliveries', 'whk_nope', '--limit', '0'), 2, /--limit must be a whole number from 1 to 1000/);
    });

    test('add --max-in-flight N and update ID --max-in-flight N set the requests open at once; out of 1 to 100 is a usage error', async (t) => {
      const { run } = await sandbox(t);
      const added = await run('webhooks', 'add', '--url', 'http://127.0.0.1:9/till', '--max-in-flight', '1', '--json');
      assert.equal(added.code, 0, added.err);
      const { id, maxInFlight } = JSON.parse(added.out) as { id: string; maxInFlight: number };
      assert.equal(maxInFlight, 1);
      const updated = await run('webhooks', 'update', id, '--max-in-flight', '100', '--json');
      assert.equal(updated.code, 0, updated.err);
      assert.deepEqual(JSON.parse(updated.out), { id, maxInFlight: 100 });
      const plain = await run('webhooks', 'update', id, '--max-in-flight', '8');
      assert.match(plain.out, new RegExp(`^Webhook endpoint ${id} now gets up to 8 requests at once`));
      const listed = JSON.parse((await run('webhooks', 'list', '--json')).out) as { items: { maxInFlight: number; retrying: number }[] };
      assert.deepEqual([listed.items[0]!.maxInFlight, listed.items[0]!.retrying], [8, 0]);
      for (const bad of ['0', '101', '-1', '2.5', 'many', '']) {
        assertFailed(await run('webhooks', 'update', id, '--max-in-flight', bad), 2, /--max-in-flight must be a whole number from 1 to 100/);
        assertFailed(await run('webhooks', 'add', '--url', 'http://127.0.0.1:9/x', '--max-in-flight', bad), 2, /--max-in-flight must be a whole number from 1 to 100/);
      }
      assertFailed(await run('webhooks', 'update', id), 2, /webhooks update needs --max-in-flight N/);
      assertFailed(await run('webhooks', 'update', '--max-in-flight', '3'), 2, /takes exactly one endpoint id/);
      assert.equal((JSON.parse((await run('webhooks', 'list', '--json')).out) as { items: unknown[] }).items.length, 1, 'nothing added by a refused add');
    });

    test('replay --from SEQ moves the endpoint back to just before SEQ; a bad or missing --from is a usage error', async (t) => {
      const { run } = await sandbox(t);
      const { id } = JSON.parse((await run('webhooks', 'add', '--url', 'http://127.0.0.1:9/hook', '--json')).out) as { id: string };
      for (const petId of ['7', '8', '9']) assert.equal((await run('pets', 'add', '--pet-id', petId, '--status', 'available')).code, 0);
      const replayed = await run('webhooks', 'replay', id, '--from', '2');
      assert.equal(replayed.code, 0, replayed.err);
      assert.equal(replayed.out, `Webhook endpoint ${id} gets every event from seq 2 on again, now: 2 events to deliver.\n`);
      const state = (JSON.parse((await run('webhooks', 'list', '--json')).out) as { items: Record<string, unknown>[] }).items[0]!;
      assert.deepEqual([state.deliveredSeq, state.backlog], [1, 2]);
      assertFailed(await run('webhooks', 'replay', id, '--from', '5'), 2, /--from 5 is past the newest event, seq 3/);
      for (const bad of [[], ['--from', '0'], ['--from', 'x'], ['--from', '-3']]) {
        assertFailed(await run('webhooks', 'replay', id, ...bad), 2, /needs --from SEQ, a whole number from 1|--from/);
      }
    });

    test('disable keeps the place, enable resumes from it, remove deletes the endpoint', async (t) => {
      const { run } = await sandbox(t);
      const { id } = JSON.parse((await run('webhooks', 'add', '--url', 'http://127.0.0.1:9/hook', '--json')).out) as { id: string };
      const state = async () => (JSON.parse((await run('webhooks', 'list', '--json')).out) as { items: Record<string, unknown>[] }).items[0]!;

      const disabled = await run('webhooks', 'disable', id);
      assert.equal(disabled.code, 0, disabled.err);
      assert.match(disabled.out, new RegExp(`^Disabled webhook endpoint ${id}: delivered up to seq 0`));
      const off = await state();
      assert.deepEqual([off.enabled, off.disabledReason], [false, DISABLED_BY_OPERATOR]);
      assert.match((await run('webhooks', 'list')).out, /disabled: by an operator/);
      const again = await run('webhooks', 'disable', id);
      assert.deepEqual([again.code, again.out], [0, `Webhook endpoint ${id} is already disabled: ${DISABLED_BY_OPERATOR}.\n`]);

      assert.equal((await run('pets', 'add', '--pet-id', '7', '--status', 'available')).code, 0);
      const enabled = await run('webhooks', 'enable', id);
      assert.equal(enabled.code, 0, enabled.err);
      assert.equal(enabled.out, `Enabled webhook endpoint ${id}: delivery resumes after seq 0 (1 event waiting).\n`);
      const on = await state();
      assert.deepEqual([on.enabled, on.disabledReason, on.deliveredSeq, on.backlog], [true, null, 0, 1]);

      const removed = await run('webhooks', 'remove', id);
      assert.deepEqual([removed.code, removed.out], [0, `Removed webhook endpoint ${id} and its delivery log.\n`]);
      assertFailed(await run('webhooks', 'remove', id), 1, /no webhook endpoint/);
      assert.deepEqual(JSON.parse((await run('webhooks', 'list', '--json')).out), { items: [], head: 1 });
    });

    test('test sends a signed webhook.test at once and prints the status; exit 1 unless 2xx; deliveries lists each attempt', async (t) => {
      const { run } = await sandbox(t);
      let status = 204;
      const hook = await receiver(t, () => status);
      const { id, secret } = JSON.parse((await run('webhooks', 'add', '--url', hook.url, '--json')).out) as { id: string; secret: string };

      const ok = await run('webhooks', 'test', id);
      assert.equal(ok.code, 0, ok.err);
      assert.match(ok.out, new RegExp(`^webhook\\.test evt_test_\\S+ to ${hook.url}: HTTP 204 in \\d+ ms: delivered\\.\\n$`));
      assert.equal(hook.received.length, 1);
      const [delivery] = hook.received;
      const event = JSON.parse(delivery!.body) as { id: string; type: string; occurredAt: string; data: unknown };
      assert.deepEqual(Object.keys(event), ['id', 'type', 'occurredAt', 'data']);
      assert.match(event.id, /^evt_test_[A-Za-z0-9_-]+$/);
      assert.equal(event.type, 'webhook.test');
      assert.equal(new Date(event.occurredAt).toISOString(), event.occurredAt);
      assert.deepEqual(event.data, { endpointId: id });
      assert.equal(delivery!.headers['content-type'], 'application/json');
      assert.equal(delivery!.headers['webhook-id'], event.id);
      assert.match(String(delivery!.headers['webhook-timestamp']), /^\d{10}$/);
      await assertVerified(secret, delivery!);

      status = 500;
      const failed = await run('webhooks', 'test', id);
      assertFailed(failed, 1, new RegExp(`^petstore-inventory: webhook\\.test evt_test_\\S+ to ${hook.url}: HTTP 500 in \\d+ ms: not delivered`));
      assert.notEqual(hook.received[1]!.headers['webhook-id'], event.id, 'each test is an event of its own');

      const table = await run('webhooks', 'deliveries', id);
      assert.equal(table.code, 0, table.err);
      const lines = table.out.trimEnd().split('\n');
      assert.match(lines[0]!, /^AT\s+EVENT\s+SEQ\s+RESULT\s+DURATION$/);
      assert.match(lines[1]!, new RegExp(`^\\S+Z\\s+${String(hook.received[1]!.headers['webhook-id'])}\\s+0\\s+HTTP 500\\s+\\d+ ms$`), 'newest first');
      assert.match(lines[2]!, new RegExp(`^\\S+Z\\s+${event.id}\\s+0\\s+HTTP 204\\s+\\d+ ms$`));

      const json = await run('webhooks', 'deliveries', id, '--json', '--limit', '1');
      assert.equal(json.code, 0, json.err);
      const attempts = JSON.parse(json.out) as Record<string, unknown>[];
      assert.equal(attempts.length, 1);
      assert.deepEqual(Object.keys(attempts[0]!), ['eventId', 'seq', 'attemptedAt', 'status', 'error', 'durationMs', 'responseBody']);
      assert.deepEqual([attempts[0]!.eventId, attempts[0]!.seq, attempts[0]!.status, attempts[0]!.error, attempts[0]!.responseBody], [hook.received[1]!.headers['webhook-id'], 0, 500, null, 'thanks']);
      assert.equal(typeof attempts[0]!.durationMs, 'number');

      const listed = await run('webhooks', 'list', '--json');
      for (const out of [ok.out, failed.err, table.out, json.out, listed.out]) assert.ok(!out.includes(secret), 'no secret in test, deliveries or list');
      assert.equal((JSON.parse(listed.out) as { items: { deliveredSeq: number }[] }).items[0]!.deliveredSeq, 0, 'a test moves nothing');
    });

    test('test reports a refused connection as the error it was, with exit 1', async (t) => {
      const { run } = await sandbox(t);
      const hook = await receiver(t, () => 204);
      const closed = hook.url.replace(/:\d+\//, ':1/');
      const { id } = JSON.parse((await run('webhooks', 'add', '--url', closed, '--json')).out) as { id: string };
      assertFailed(await run('webhooks', 'test', id), 1, /: not delivered/);
      const [attempt] = JSON.parse((await run('webhooks', 'deliveries', id, '--json')).out) as { status: number | null; error: string | null }[];
      assert.equal(attempt!.status, null);
      assert.ok(attempt!.error, 'the network error is recorded');
    });

    test('rotate-secret prints the new secret once; for a day deliveries carry both signatures', async (t) => {
      const { run } = await sandbox(t);
      const hook = await receiver(t, () => 200);
      const { id, secret: old } = JSON.parse((await run('webhooks', 'add', '--url', hook.url, '--json')).out) as { id: string; secret: string };

      const rotated = await run('webhooks', 'rotate-secret', id);
      assert.equal(rotated.code, 0, rotated.err);
      const fresh = SECRET.exec(rotated.out)?.[0];
      assert.ok(fresh && fresh !== old, rotated.out);
      assert.equal(rotated.out.split(fresh).length, 2, 'printed once');
      assert.ok(!rotated.out.includes(old), 'the old secret is not printed');
      assert.match(rotated.out, /will not be shown again/);

      const json = await run('webhooks', 'rotate-secret', id, '--json');
      assert.equal(json.code, 0, json.err);
      const body = JSON.parse(json.out) as { id: string; secret: string; previousSecretUntil: string };
      assert.deepEqual(Object.keys(body), ['id', 'secret', 'previousSecretUntil']);
      assert.equal(body.id, id);
      assert.match(body.secret, new RegExp(`^${SECRET.source}$`));
      const untilMs = new Date(body.previousSecretUntil).getTime() - Date.now();
      assert.ok(untilMs > 23 * 3600_000 && untilMs <= 24 * 3600_000, `about 24 h: ${body.previousSecretUntil}`);

      assert.equal((await run('webhooks', 'test', id)).code, 0);
      const [delivery] = hook.received;
      assert.equal(String(delivery!.headers['webhook-signature']).split(' ').length, 2, 'two signatures');
      assert.ok(signedWith(body.secret, delivery!), 'signed with the newest secret');
      assert.ok(signedWith(fresh, delivery!), 'and with the one it replaced');
      assert.ok(!signedWith(old, delivery!), 'no longer with the first');
      await assertVerified(body.secret, delivery!);
    });

    test('keys create --scope webhooks:manage makes a key that may read the endpoints', async (t) => {
      const { run } = await sandbox(t);
      const r = await run('keys', 'create', '--name', 'ops', '--scope', 'webhooks:manage', '--json');
      assert.equal(r.code, 0, r.err);
      assert.deepEqual((JSON.parse(r.out) as { scopes: string[] }).scopes, ['inventory:read', 'webhooks:manage']);
      const both = await run('keys', 'create', '--name', 'ops2', '--scope', 'inventory:write', '--scope', 'webhooks:manage', '--json');
      assert.deepEqual((JSON.parse(both.out) as { scopes: string[] }).scopes, ['inventory:write', 'webhooks:manage']);
      assert.match((await run('webhooks', '--help')).out, /^ {2}rotate-secret {2}replace the signing secret/m);
    });
  });
}
