import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { BACKENDS, backendSkip } from '../support/backends.js';
import { sleep } from '../support/process.js';
import { KeepAliveClient } from '../support/keep-alive-client.js';
import { byScale } from '../support/scale.js';
import { pets, startService, type Service } from '../support/service.js';

/**
 * kill -9 under PATCH load, round after round, on one database (decisions 5.2: a 2xx means the
 * change is on disk). Keep-alive clients each own a few pets and set rising quantities, some with
 * an Idempotency-Key. After each restart: every pet holds its last acknowledged quantity or one sent
 * after it; every acknowledged change has its history row; a keyed request retried after the crash
 * is applied exactly once (decisions 5.6). test/store/durability.test.ts checks one kill; this one repeats
 * it under a heavier, mixed load and checks the history and the keys too.
 */

const ROUNDS = byScale(3, 20);
const CLIENTS = 6;
const PETS_PER_CLIENT = 3;
/** Clients 0..KEYED-1 send an Idempotency-Key with every PATCH. */
const KEYED = 3;

interface Sent {
  petId: number;
  quantity: number;
  requestId: string;
  idempotencyKey?: string;
}

/** What the clients saw in a round, per pet: every quantity sent, the acknowledged PATCHes, and per client its last request. */
interface Ledger {
  sent: Map<number, Set<number>>;
  lastAcked: Map<number, number>;
  acked: Sent[];
  /** The last keyed request of each keyed client, and whether it was acknowledged. */
  lastKeyed: { request: Sent; acked: boolean }[];
  unexpected: string[];
}

for (const backend of BACKENDS) {
  describe(`crash on ${backend}`, { skip: await backendSkip(backend) }, () => {
    test(`${ROUNDS} rounds of kill -9 under keep-alive PATCH load: every acknowledged write found`, { timeout: byScale(120_000, 900_000) }, async (t) => {
      // A per-key rate limit would refuse the load's one key, and on a machine loaded with other tests a process
      // stalled for over a second sheds the next requests with 503: both off, as this test is about what a 2xx keeps.
      const service = await startService(t, backend, { items: pets(CLIENTS * PETS_PER_CLIENT), env: { RATE_LIMIT_PER_MINUTE: '0', MAX_EVENT_LOOP_DELAY_MS: '0' } });
      const next = new Map<number, number>();
      let checked = 0;
      const retries = { replayed: 0, appliedNow: 0 };
      for (let round = 1; round <= ROUNDS; round++) {
        if (round > 1) await service.restart();
        const ledger = await loadUntilKilled(service, next, round);
        assert.deepEqual(ledger.unexpected, [], `round ${round}: answers other than 200 before the kill`);
        await service.restart();
        checked += await verify(service, ledger, round);
        await retryKeyed(service, ledger, round, retries);
      }
      t.diagnostic(`${ROUNDS} rounds on ${backend}: ${checked} acknowledged writes found (quantity and history row), keyed retries after restart applied exactly once: ${retries.replayed} replayed, ${retries.appliedNow} applied then`);
    });
  });
}

/** Runs the clients until the server is killed (at a random moment once enough writes are acknowledged); waits for its exit. */
async function loadUntilKilled(service: Service, next: Map<number, number>, round: number): Promise<Ledger> {
  const ledger: Ledger = { sent: new Map(), lastAcked: new Map(), acked: [], lastKeyed: [], unexpected: [] };
  const key = service.keys.write;
  let killed = false;
  const clients = Array.from({ length: CLIENTS }, async (_, c) => {
    const client = new KeepAliveClient(service.server.port);
    try {
      for (let i = 0; !killed; i++) {
        const petId = c * PETS_PER_CLIENT + (i % PETS_PER_CLIENT) + 1;
        const quantity = (next.get(petId) ?? 0) + 1;
        next.set(petId, quantity);
        const sent: Sent = { petId, quantity, requestId: `crash-${round}-${c}-${i}` };
        if (c < KEYED) sent.idempotencyKey = `crash-${petId}-${quantity}`;
        const values = ledger.sent.get(petId) ?? new Set<number>();
        ledger.sent.set(petId, values.add(quantity));
        if (c < KEYED) ledger.lastKeyed[c] = { request: sent, acked: false };
        const answer = await client.send('PATCH', `/v1/inventory/${petId}`, headersOf(key, sent), JSON.stringify({ quantity }));
        if (answer === undefined) return; // the server died under it
        if (answer.status !== 200) {
          ledger.unexpected.push(`${answer.status} ${answer.body}`);
          continue;
        }
        ledger.lastAcked.set(petId, quantity);
        ledger.acked.push(sent);
        if (c < KEYED) ledger.lastKeyed[c]!.acked = true;
      }
    } finally {
      client.close();
    }
  });
  // Enough acknowledged writes that the kill lands in the middle of the load, at a moment that varies.
  const target = 150 + Math.floor(Math.random() * 300);
  while (ledger.acked.length < target && ledger.unexpected.length === 0) await sleep(2);
  service.server.proc.kill('SIGKILL');
  killed = true;
  await Promise.all(clients);
  await service.server.exited;
  return ledger;
}

function headersOf(key: string, sent: Sent): Record<string, string> {
  return { authorization: `Bearer ${key}`, 'x-request-id': sent.requestId, ...(sent.idempotencyKey ? { 'idempotency-key': sent.idempotencyKey } : {}) };
}

/** Checks the round's acknowledged writes against the store; returns how many were checked. */
async function verify(service: Service, ledger: Ledger, round: number): Promise<number> {
  const stored = new Map((await service.store.entries.listInventory()).map((item) => [Number(item.petId), item.quantity]));
  for (const [petId, values] of ledger.sent) {
    const quantity = stored.get(petId)!;
    const acked = ledger.lastAcked.get(petId);
    // Not older than the last acknowledged value; if newer, a value that was sent (committed, its answer lost).
    if (acked !== undefined) assert.ok(quantity >= acked, `round ${round}, pet ${petId}: stored ${quantity}, last acknowledged ${acked}`);
    assert.ok(values.has(quantity) || (acked === undefined && quantity < Math.min(...values)), `round ${round}, pet ${petId}: stored ${quantity} was never sent`);
  }
  const byPet = new Map<number, Set<string>>();
  for (const petId of new Set(ledger.acked.map((s) => s.petId))) {
    const rows = await service.store.history.listHistory(BigInt(petId), { limit: 100_000 });
    byPet.set(petId, new Set((rows ?? []).map((r) => `${r.quantity}/${r.requestId}`)));
  }
  for (const sent of ledger.acked) {
    assert.ok(byPet.get(sent.petId)!.has(`${sent.quantity}/${sent.requestId}`), `round ${round}: no history row for acknowledged ${JSON.stringify(sent)}`);
  }
  return ledger.acked.length;
}

/**
 * Retries each keyed client's last request with its key and body: 200 either way (replayed if it
 * was applied before the kill), and the pet's history holds that change exactly once.
 */
async function retryKeyed(service: Service, ledger: Ledger, round: number, retries: { replayed: number; appliedNow: number }): Promise<void> {
  const client = new KeepAliveClient(service.server.port);
  try {
    for (const { request: sent, acked } of ledger.lastKeyed) {
      const retry = { ...sent, requestId: `${sent.requestId}-retry` };
      const answer = await client.send('PATCH', `/v1/inventory/${sent.petId}`, headersOf(service.keys.write, retry), JSON.stringify({ quantity: sent.quantity }));
      assert.equal(answer?.status, 200, `round ${round}: retry of ${JSON.stringify(sent)}: ${answer?.status} ${answer?.body}`);
      if (acked) assert.equal(answer.headers['idempotent-replayed'], 'true', `round ${round}: an acknowledged keyed request is replayed`);
      if (answer.headers['idempotent-replayed'] === 'true') retries.replayed++;
      else retries.appliedNow++;
      const rows = (await service.store.history.listHistory(BigInt(sent.petId), { limit: 100_000 })) ?? [];
      assert.equal(rows.filter((r) => r.quantity === sent.quantity).length, 1, `round ${round}: ${JSON.stringify(sent)} applied exactly once`);
    }
  } finally {
    client.close();
  }
}
