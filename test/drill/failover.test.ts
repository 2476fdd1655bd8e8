import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { promisify } from 'node:util';
import { backendSkip, createTestDatabase, type TestDatabase } from '../support/backends.js';
import { codeBlocks, ROOT } from '../docs/markdown.js';
import { BIN, sleep, startServerProcess, tempDir, waitFor, withDeadline, type ServerProcess } from '../support/process.js';
import { natsSkip, startTestNats, type TestNats } from '../support/nats.js';
import { byScale } from '../support/scale.js';
import { startReceiver } from '../support/webhook-receiver.js';
import { HAPROXY_CONFIG, haproxySkip, startBalancer } from './haproxy.js';
import { Load } from './load.js';
import { ReconnectingStream } from './reconnecting-stream.js';

/**
 * The failover drill: three instances on one PostgreSQL database behind HAProxy, run with
 * deploy/haproxy.cfg as the docs show it, under a steady load of PATCH and GET. One instance is
 * killed with `kill -9` (the one delivering to the webhook endpoint and publishing to NATS), another
 * stopped with SIGTERM and started again. No acknowledged write may be lost, a graceful stop may fail
 * no request, event streams and a webhook endpoint miss nothing, and the NATS stream holds every
 * event exactly once, in order.
 * Short in `npm test`; `npm run test:drill` (HARDENING_SCALE=full) runs it longer with more clients.
 */

const run = promisify(execFile);
/** A deadline on waiting for what must happen, never a measure of speed. */
const LIVENESS_MS = 60_000;
/** Load per phase. */
const PHASE_MS = byScale(3_000, 30_000);
const WRITERS = byScale(4, 16);
const READERS = byScale(2, 8);
/** One on each instance at least (leastconn spreads them while nothing else is open), so both instances stopped had some. */
const STREAMS = byScale(3, 6);
const PETS_PER_WRITER = 2;
/** An instance that dies holds its webhook endpoints until its lease runs out: another takes them within about 4/3 of it. */
const WEBHOOK_LEASE_MS = 6_000;
/** Longest a drain waits for connections still open. */
const SHUTDOWN_DRAIN_MS = 5_000;
/** Longer than HAProxy takes to see /readyz 503 (inter 500ms × fall 2), with a margin: it stops sending before the instance stops listening. */
const SHUTDOWN_MIN_DRAIN_MS = 2_000;
/** The stream the relay publishes to, and its name on the relay's lease (src/relay/subjects.ts). */
const NATS_STREAM = 'INVENTORY_EVENTS';

const INSTANCE_ENV = {
  WEBHOOKS_ALLOW_PRIVATE: 'true',
  WEBHOOK_LEASE_MS: String(WEBHOOK_LEASE_MS),
  SHUTDOWN_DRAIN_MS: String(SHUTDOWN_DRAIN_MS),
  SHUTDOWN_MIN_DRAIN_MS: String(SHUTDOWN_MIN_DRAIN_MS),
  TRUST_PROXY: '1',
  // One key makes every write of the drill: neither its rate nor its count of idempotency records is what is tested.
  RATE_LIMIT_PER_MINUTE: '0',
  IDEMPOTENCY_RECORDS_PER_KEY: '1000000',
  LOG_LEVEL: 'info',
};

async function cli(db: TestDatabase, ...args: string[]): Promise<string> {
  const { stdout } = await run(BIN, args, { env: { ...process.env, DATABASE_URL: db.databaseUrl, WEBHOOKS_ALLOW_PRIVATE: 'true' } });
  return stdout;
}

/** The webhook dispatcher's name of each instance, from its log line on taking an endpoint. */
function holderOf(server: ServerProcess): string | undefined {
  return /"holder":"(whd_[^"]+)"[^\n]*delivering from this instance/.exec(server.stdout())?.[1];
}

/** The event relay's name of an instance and the position it started from, from its log line on taking the relay's lease. */
function relayHoldersOf(server: ServerProcess): { holder: string; position: number }[] {
  return [...server.stdout().matchAll(/"holder":"(rly_[^"]+)","position":(\d+),"msg":"event relay: publishing from this instance"/g)].map((m) => ({
    holder: m[1]!,
    position: Number(m[2]),
  }));
}

test('the HAProxy configuration in docs/deployment.md is deploy/haproxy.cfg, line for line', () => {
  const blocks = codeBlocks('docs/deployment.md', readFileSync(join(ROOT, 'docs', 'deployment.md'), 'utf8')).filter((b) => b.language === 'haproxy');
  assert.equal(blocks.length, 1, 'one haproxy block');
  assert.deepEqual(blocks[0]!.lines, readFileSync(HAPROXY_CONFIG, 'utf8').trimEnd().split('\n'));
});

describe('failover drill: three instances behind HAProxy', { skip: (await backendSkip('postgres')) || haproxySkip() || natsSkip() }, () => {
  test(`kill -9 one instance and restart another with SIGTERM under load (${PHASE_MS} ms per phase)`, async (t) => {
    const db = await createTestDatabase('postgres', t);
    await (await db.open()).close();
    const key = (await cli(db, 'keys', 'create', '--name', 'drill', '--scope', 'inventory:write')).trim();
    const csv = join(tempDir(t), 'pets.csv');
    const pets = Array.from({ length: WRITERS * PETS_PER_WRITER }, (_, i) => i + 1);
    writeFileSync(csv, `petId,quantity,status\n${pets.map((id) => `${id},0,available`).join('\n')}\n`);
    await cli(db, 'pets', 'import', csv);
    const receiver = await startReceiver(t);
    await cli(db, 'webhooks', 'add', '--url', receiver.url, '--description', 'drill');
    const webhookFrom = Number((await db.sql<{ delivered_seq: string }>('SELECT delivered_seq FROM webhook_endpoints'))[0]!.delivered_seq);

    const nats: TestNats = await startTestNats(t);

    const env = { DATABASE_URL: db.databaseUrl, EVENTS_NATS_URL: nats.url, ...INSTANCE_ENV };
    // The first instance alone first, until it delivers to the webhook endpoint and publishes to NATS:
    // the kill -9 below then takes both away at once.
    const first = await startServerProcess(t, env);
    await waitFor(() => holderOf(first) !== undefined && relayHoldersOf(first).length > 0, LIVENESS_MS);
    const instances = [first, ...(await Promise.all([2, 3].map(() => startServerProcess(t, env))))];
    /** Every process started, the restarted one too: the relay's successor is found by its log line. */
    const started = [...instances];
    const balancer = await startBalancer(t, instances.map((s) => `127.0.0.1:${s.port}`), LIVENESS_MS);
    const load = new Load({ baseUrl: balancer.baseUrl, key, writers: WRITERS, readers: READERS, petsPerWriter: PETS_PER_WRITER, resendForMs: LIVENESS_MS });

    const head = Number((await fetch(`${balancer.baseUrl}/v1/inventory`, { headers: { authorization: `Bearer ${key}` } })).headers.get('x-events-head'));
    const streams: ReconnectingStream[] = [];
    t.after(() => Promise.all(streams.map((s) => s.close())));
    for (let i = 0; i < STREAMS; i++) {
      streams.push(new ReconnectingStream(balancer.baseUrl, key, head));
      await withDeadline(streams.at(-1)!.opened, LIVENESS_MS, 'an event stream through the balancer');
    }

    load.start();
    await sleep(PHASE_MS);

    // kill -9 the instance that delivers to the webhook endpoint, so its delivery has to move.
    await waitFor(() => instances.some((s) => holderOf(s) !== undefined), LIVENESS_MS);
    const holder = (await db.sql<{ lease_holder: string }>('SELECT lease_holder FROM webhook_endpoints'))[0]!.lease_holder;
    const victim = instances.findIndex((s) => holderOf(s) === holder);
    assert.ok(victim >= 0, `the lease holder ${holder} is one of the instances`);
    const relayHolder = (await db.sql<{ lease_holder: string }>(`SELECT lease_holder FROM relays WHERE name = '${NATS_STREAM}'`))[0]!.lease_holder;
    assert.ok(
      relayHoldersOf(instances[victim]!).some((r) => r.holder === relayHolder),
      `the instance delivering to the webhook endpoint also publishes to NATS (relay lease holder ${relayHolder})`,
    );
    load.phase = 'kill -9';
    const killedAt = Date.now();
    instances[victim]!.proc.kill('SIGKILL');
    await instances[victim]!.exited;
    // Nothing more comes from the killed publisher: what it got onto the stream, its successor may publish again.
    const lastOnStreamAtKill = Number((await nats.lastMsgId(NATS_STREAM))?.replace('evt_', '') ?? 0);
    const relayMoved = waitForRelayToMove(db, relayHolder, killedAt);
    // Awaited at the end; a failure before then is not an unhandled rejection.
    relayMoved.catch(() => {});
    await balancer.until(`instance-${victim + 1}`, 'DOWN');
    const downAfterKillMs = Date.now() - killedAt;
    const moved = waitForDeliveryToMove(db, holder, killedAt);
    await sleep(PHASE_MS);
    const { ms: deliveryMovedMs, holder: deliveryHolder } = await moved;
    // Taken over by an instance still running: the lease of a dead one ran out and was not simply renewed by it.
    await waitFor(() => instances.some((s, i) => i !== victim && holderOf(s) === deliveryHolder), LIVENESS_MS).catch(() =>
      assert.fail(`webhook delivery moved to ${deliveryHolder}, which is none of the surviving instances`),
    );
    // Delivery goes on from the instance that took the endpoint over.
    await withDeadline(receiver.waitFor((r) => r.at(-1)!.at > killedAt + deliveryMovedMs), LIVENESS_MS, 'a webhook delivery after the lease moved');
    const firstDeliveryAfterKillMs = receiver.received.find((r) => r.at > killedAt + deliveryMovedMs)!.at - killedAt;

    // SIGTERM another, and start it again on its port once it has exited.
    load.phase = 'SIGTERM';
    const stopped = (victim + 1) % 3;
    const server = `instance-${stopped + 1}`;
    const upBefore = balancer.count(server, 'UP');
    const termAt = Date.now();
    instances[stopped]!.proc.kill('SIGTERM');
    await balancer.until(server, 'DOWN');
    const downAfterTermMs = Date.now() - termAt;
    // SHUTDOWN_MIN_DRAIN_MS: the balancer took it out while it still listened, so no request of this phase met a refused connection
    // (HAProxy's retry-on conn-failure, there for a crash, had nothing to retry).
    assert.doesNotMatch(instances[stopped]!.stdout(), /no longer listening/, 'HAProxy saw /readyz 503 before the instance stopped listening');
    assert.equal(await instances[stopped]!.exited, 0, 'a graceful stop exits 0');
    const exitedAfterTermMs = Date.now() - termAt;
    instances[stopped] = await startServerProcess(t, { ...env, PORT: String(instances[stopped]!.port) });
    started.push(instances[stopped]);
    await balancer.until(server, 'UP', upBefore);
    await sleep(PHASE_MS);

    load.phase = 'after';
    await sleep(PHASE_MS);
    await load.stop();

    // Every acknowledged write is what the store holds, through a surviving instance and in the database.
    const survivor = instances[(victim + 2) % 3]!;
    const listed = JSON.parse(await (await fetch(`${survivor.baseUrl}/v1/inventory`, { headers: { authorization: `Bearer ${key}` } })).text()) as { petId: number; quantity: number }[];
    const stored = await db.sql<{ pet_id: string; quantity: number }>('SELECT pet_id, quantity FROM inventory ORDER BY pet_id');
    const expected = pets.map((petId) => ({ petId, quantity: load.acknowledged.get(petId) ?? 0 }));
    assert.deepEqual(load.unresolved, [], 'every write acknowledged in the end');
    assert.deepEqual(listed.map(({ petId, quantity }) => ({ petId, quantity })), expected, 'GET through a surviving instance');
    assert.deepEqual(stored.map((r) => ({ petId: Number(r.pet_id), quantity: r.quantity })), expected, 'the database');

    // Every event after the streams' start, exactly once and in order, on every stream; and on the webhook, at least once.
    const seqs = (await db.sql<{ seq: string }>(`SELECT seq FROM inventory_events WHERE seq > ${head} ORDER BY seq`)).map((r) => Number(r.seq));
    const last = seqs.at(-1)!;
    for (const stream of streams) await waitFor(() => (stream.last ?? 0) >= last, LIVENESS_MS);
    await Promise.all(streams.map((s) => s.close()));
    for (const [i, stream] of streams.entries()) assert.deepEqual(stream.seqs, seqs, `stream ${i}`);
    const reconnects = streams.reduce((n, s) => n + s.reconnects, 0);
    assert.ok(reconnects >= 2, `the streams of both stopped instances reconnected (${reconnects} reconnects)`);
    const webhookSeqs = seqs.filter((seq) => seq > webhookFrom);
    const delivered = () => new Set(receiver.received.map((r) => String(r.headers['webhook-id'])));
    const missing = () => {
      const ids = delivered();
      return webhookSeqs.filter((seq) => !ids.has(`evt_${seq}`));
    };
    await waitFor(() => missing().length === 0, LIVENESS_MS).catch(() => assert.fail(`webhook events missing: ${missing().slice(0, 20).join(', ')}`));
    const inLog = new Set(webhookSeqs.map((seq) => `evt_${seq}`));
    const extra = [...delivered()].filter((id) => !inLog.has(id));
    assert.deepEqual(extra, [], 'no webhook event that is not in the log');

    // The NATS stream: every event of the log, from its first, exactly once and in order, its id as
    // Nats-Msg-Id, across the kill -9 of the publisher (its successor's republished events dropped as duplicates).
    const relay = await relayMoved;
    const successor = started.flatMap(relayHoldersOf).find((r) => r.holder === relay.holder);
    assert.ok(successor, `the relay's successor ${relay.holder} is one of the instances`);
    const logged = await db.sql<{ seq: string; type: string }>('SELECT seq, type FROM inventory_events ORDER BY seq');
    const lastInLog = `evt_${logged.at(-1)!.seq}`;
    await waitForStream(nats, lastInLog);
    const onNats = await nats.messages(NATS_STREAM);
    assert.deepEqual(
      onNats.map((m) => ({ subject: m.subject, msgId: m.msgId })),
      logged.map((r) => ({ subject: `inventory.events.${r.type}`, msgId: `evt_${r.seq}` })),
      'the NATS stream holds every event of the log once, in seq order, its id as Nats-Msg-Id',
    );
    const bodies = onNats.map((m) => JSON.parse(m.body) as { id: string; seq: number });
    assert.deepEqual(bodies.map((b) => `${b.id} ${b.seq}`), logged.map((r) => `evt_${r.seq} ${r.seq}`), 'each body is its event');

    const figures = [
      `load: ${WRITERS} writers, ${READERS} readers, ${STREAMS} event streams, ${PHASE_MS} ms per phase`,
      `requests that succeeded: ${[...load.requests].map(([k, n]) => `${k} ${n}`).join(', ')}`,
      `failed attempts by phase, kind and cause: ${[...load.failures].map(([k, n]) => `${k.replaceAll('|', ' ')} ${n}`).join('; ') || 'none'}`,
      `PATCHes resent with their Idempotency-Key after a failure and answered as replays: ${load.replays}`,
      `acknowledged writes checked: ${expected.length} pets, last acknowledged quantity = GET through a survivor = database`,
      `kill -9: HAProxy marked it DOWN after ${downAfterKillMs} ms`,
      `SIGTERM: HAProxy marked it DOWN after ${downAfterTermMs} ms; the process exited (0) after ${exitedAfterTermMs} ms`,
      `events checked on each stream: ${seqs.length} (seq ${seqs[0]}..${last}), ${streams.map((s) => s.reconnects).join('/')} reconnects, ${streams.map((s) => s.refusals).join('/')} refused opens`,
      `webhook events checked: ${webhookSeqs.length}, ${receiver.received.length - delivered().size} delivered twice`,
      `webhook delivery moved to a surviving instance ${deliveryMovedMs} ms after the kill (WEBHOOK_LEASE_MS=${WEBHOOK_LEASE_MS}); its first delivery ${firstDeliveryAfterKillMs} ms after the kill`,
      `events checked on NATS: ${onNats.length} (seq ${logged[0]!.seq}..${logged.at(-1)!.seq}), each once, in order`,
      `NATS publishing moved to a surviving instance ${relay.ms} ms after the kill (relay lease 15 s); it started after seq ${successor.position}, ` +
        `the killed one had got seq ${lastOnStreamAtKill} onto the stream: ${Math.max(0, lastOnStreamAtKill - successor.position)} events published again and dropped as duplicates`,
    ];
    for (const line of figures) t.diagnostic(line);

    assert.equal(load.failuresIn('steady'), 0, 'no failure before the kill');
    assert.equal(load.failuresIn('SIGTERM'), 0, 'a graceful stop fails no request');
    assert.equal(load.failuresIn('after'), 0, 'no failure once the instance is back');
    assert.ok(load.failuresIn('kill -9') <= WRITERS + READERS, `kill -9 fails at most the requests in flight on it (${WRITERS + READERS} clients)`);
  });
});

/** Resolves once the NATS stream's last message is `msgId` (the log's last event). */
async function waitForStream(nats: TestNats, msgId: string): Promise<void> {
  for (const until = Date.now() + LIVENESS_MS; (await nats.lastMsgId(NATS_STREAM)) !== msgId; await sleep(200)) {
    if (Date.now() > until) throw new Error(`the NATS stream did not reach ${msgId} within ${LIVENESS_MS} ms`);
  }
}

/** Resolves with the ms from `since` to when the event relay's lease is held by another instance, and that holder. */
async function waitForRelayToMove(db: TestDatabase, from: string, since: number): Promise<{ ms: number; holder: string }> {
  for (;;) {
    const [row] = await db.sql<{ lease_holder: string | null }>(`SELECT lease_holder FROM relays WHERE name = '${NATS_STREAM}'`);
    if (row?.lease_holder && row.lease_holder !== from) return { ms: Date.now() - since, holder: row.lease_holder };
    if (Date.now() - since > LIVENESS_MS) throw new Error(`NATS publishing still with ${from} ${LIVENESS_MS} ms after the kill`);
    await sleep(100);
  }
}

/** Resolves with the ms from `since` to when the webhook endpoint's lease is held by another instance, and that holder. */
async function waitForDeliveryToMove(db: TestDatabase, from: string, since: number): Promise<{ ms: number; holder: string }> {
  for (;;) {
    const [row] = await db.sql<{ lease_holder: string | null }>('SELECT lease_holder FROM webhook_endpoints');
    if (row?.lease_holder && row.lease_holder !== from) return { ms: Date.now() - since, holder: row.lease_holder };
    if (Date.now() - since > LIVENESS_MS) throw new Error(`webhook delivery still with ${from} ${LIVENESS_MS} ms after the kill`);
    await sleep(100);
  }
}
