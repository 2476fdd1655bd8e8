import type Database from 'better-sqlite3';
import type { DeliveryAttempt, WebhookEndpoint } from '../../domain/webhook.js';
import { inBatches, PRUNE_BATCH } from '../pruning.js';
import type { Webhooks } from '../store.js';
import { asUnavailable, briefly, LIMIT, type Run } from './connection.js';
import { DELIVERY_COLUMNS, deliveryRow, progressWrite, type DeliveryRow } from './record-progress.js';
import type { ChangeWriter } from './writer.js';

interface EndpointRow {
  id: string;
  url: string;
  description: string | null;
  secret: string;
  previous_secret: string | null;
  previous_secret_until: string | null;
  enabled: number;
  disabled_reason: string | null;
  created_at: string;
  delivered_seq: number;
  failures: number;
  next_attempt_at: string | null;
  last_failure_at: string | null;
  last_failure: string | null;
}

const ENDPOINT_COLUMNS = `id, url, description, secret, previous_secret, previous_secret_until, enabled, disabled_reason, created_at,
  delivered_seq, failures, next_attempt_at, last_failure_at, last_failure`;
/**
 * Ends the current claim of the lease without giving the lease up: its holder's worker is refused
 * at its next flush, and the holder's next round claims it anew (a worker that starts from the
 * store's place, once the old one stopped); no other instance can take it meanwhile, so two never
 * send to one endpoint at once.
 */
const NEW_CLAIM = 'lease_since = coalesce(lease_since, 0) + 1';

/**
 * The SQLite store's webhook endpoints and delivery log. The delivery log and the endpoints'
 * progress, written by every endpoint worker several times a second, commit in the writer
 * (record-progress.ts), so their fsync never stops the event loop; the rest (leases each round,
 * operators' acts) on the event loop's connection. Every write is one statement or one IMMEDIATE
 * transaction: cluster workers share the file, and the write lock taken first means no check can
 * go stale before its write. Leases run on Date.now(): every process on the file runs on this one
 * machine.
 */
export function webhooks(db: Database.Database, run: Run, writer: Pick<ChangeWriter, 'recordProgress' | 'recordAttempts'>): Webhooks {
  const stmt = {
    // The head is read under the write lock the insert takes, so no event can commit between the two.
    add: db.prepare<[NewRow], EndpointRow>(
      `INSERT INTO webhook_endpoints (id, url, description, secret, enabled, created_at, delivered_seq, failures)
       SELECT @id, @url, @description, @secret, 1, @created_at, events_head, 0 FROM store_state WHERE id = 1
       RETURNING ${ENDPOINT_COLUMNS}`,
    ),
    list: db.prepare<[], EndpointRow>(`SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints ORDER BY created_at, id`),
    get: db.prepare<[string], EndpointRow>(`SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = ?`),
    removeDeliveries: db.prepare<[string]>('DELETE FROM webhook_deliveries WHERE endpoint_id = ?'),
    remove: db.prepare<[string]>('DELETE FROM webhook_endpoints WHERE id = ?'),
    disable: db.prepare<[string, string]>(
      'UPDATE webhook_endpoints SET enabled = 0, disabled_reason = ?, lease_holder = NULL, lease_until = NULL WHERE id = ?',
    ),
    enable: db.prepare<[string]>(
      `UPDATE webhook_endpoints SET enabled = 1, disabled_reason = NULL, failures = 0, next_attempt_at = NULL, ${NEW_CLAIM} WHERE id = ?`,
    ),
    replay: db.prepare<[number, string]>(
      `UPDATE webhook_endpoints SET delivered_seq = ?, failures = 0, next_attempt_at = NULL, ${NEW_CLAIM} WHERE id = ?`,
    ),
    // The right-hand sides read the row as it was: the old secret becomes the previous one.
    rotate: db.prepare<[string, string, string], EndpointRow>(
      `UPDATE webhook_endpoints SET previous_secret = secret, previous_secret_until = ?, secret = ? WHERE id = ?
       RETURNING ${ENDPOINT_COLUMNS}`,
    ),
    // One statement under the write lock: two processes cannot both see a lease free and take it.
    // The right-hand sides read the row as it was: a live lease of this holder is renewed (its
    // claim time kept); any other is a new claim, whose time is always later than the last one's.
    lease: db.prepare<{ holder: string; now: number; until: number }, EndpointRow & { lease_since: number }>(
      `UPDATE webhook_endpoints SET lease_holder = @holder, lease_until = @until,
         lease_since = iif(lease_holder = @holder AND lease_until >= @now, lease_since, max(@now, coalesce(lease_since, 0) + 1))
       WHERE enabled = 1 AND (lease_holder = @holder OR lease_until IS NULL OR lease_until < @now)
       RETURNING ${ENDPOINT_COLUMNS}, lease_since`,
    ),
    release: db.prepare<[string]>('UPDATE webhook_endpoints SET lease_holder = NULL, lease_until = NULL WHERE lease_holder = ?'),
    deliveries: db.prepare<[string, number], DeliveryRow>(
      `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE endpoint_id = ? ORDER BY id DESC LIMIT ${LIMIT}`,
    ),
    purge: db.prepare<[string, number]>(
      `DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM webhook_deliveries WHERE attempted_at < ? LIMIT ${LIMIT})`,
    ),
  };
  const remove = db.transaction((id: string) => {
    stmt.removeDeliveries.run(id);
    return stmt.remove.run(id).changes === 1;
  });
  // As `run`: refused once the store is closed, "cannot reach the store now" as StoreUnavailableError.
  const committed = async <T>(write: () => Promise<T>): Promise<T> => {
    try {
      return await run(write);
    } catch (err) {
      throw asUnavailable(err);
    }
  };

  return {
    addEndpoint: async (endpoint) =>
      run(() =>
        toEndpoint(
          stmt.add.get({
            id: endpoint.id,
            url: endpoint.url,
            description: endpoint.description,
            secret: endpoint.secret,
            created_at: endpoint.createdAt.toISOString(),
          })!,
        ),
      ),
    listEndpoints: async () => run(() => stmt.list.all().map(toEndpoint)),
    getEndpoint: async (id) =>
      run(() => {
        const row = stmt.get.get(id);
        return row && toEndpoint(row);
      }),
    removeEndpoint: async (id) => run(() => remove.immediate(id)),
    disableEndpoint: async (id, why) => run(() => stmt.disable.run(why, id).changes === 1),
    enableEndpoint: async (id) => run(() => stmt.enable.run(id).changes === 1),
    rotateSecret: async (id, secret, previousUntil) =>
      run(() => {
        const row = stmt.rotate.get(previousUntil.toISOString(), secret, id);
        return row && toEndpoint(row);
      }),
    leaseEndpoints: async (holder, leaseMs) =>
      run(() => {
        const now = Date.now();
        return stmt.lease
          .all({ holder, now, until: now + leaseMs })
          .map((row) => ({ ...toEndpoint(row), leaseClaimedAt: new Date(row.lease_since) }))
          .sort(oldestFirst);
      }),
    releaseLeases: async (holder) => void run(() => stmt.release.run(holder)),
    replayFrom: async (id, after) => run(() => stmt.replay.run(after, id).changes === 1),
    recordProgress: (id, holder, progress, claimedAt) => committed(() => writer.recordProgress(progressWrite(id, holder, progress, claimedAt))),
    recordAttempts: (attempts) => committed(() => writer.recordAttempts(attempts.map(deliveryRow))),
    listDeliveries: async (id, limit) => run(() => stmt.deliveries.all(id, limit).map(toAttempt)),
    async purgeDeliveries(before) {
      const cutoff = before.toISOString();
      return inBatches(0, async () => {
        const deleted = run(() => briefly(db, () => stmt.purge.run(cutoff, PRUNE_BATCH).changes));
        return deleted === PRUNE_BATCH ? { deleted, next: 0 } : { deleted };
      });
    },
  };
}

interface NewRow {
  id: string;
  url: string;
  description: string | null;
  secret: string;
  created_at: string;
}

/** Oldest first, as listEndpoints: RETURNING comes in no particular order. */
function oldestFirst(a: WebhookEndpoint, b: WebhookEndpoint): number {
  return a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

function toAttempt(row: DeliveryRow): DeliveryAttempt {
  return {
    endpointId: row.endpoint_id,
    eventId: row.event_id,
    seq: row.seq,
    attemptedAt: new Date(row.attempted_at),
    status: row.status,
    error: row.error,
    durationMs: row.duration_ms,
    responseBody: row.response_body,
  };
}

function toEndpoint(row: EndpointRow): WebhookEndpoint {
  const date = (s: string | null) => (s === null ? null : new Date(s));
  return {
    id: row.id,
    url: row.url,
    description: row.description,
    secret: row.secret,
    previousSecret: row.previous_secret,
    previousSecretUntil: date(row.previous_secret_until),
    enabled: row.enabled === 1,
    disabledReason: row.disabled_reason,
    createdAt: new Date(row.created_at),
    deliveredSeq: row.delivered_seq,
    failures: row.failures,
    nextAttemptAt: date(row.next_attempt_at),
    lastFailureAt: date(row.last_failure_at),
    lastFailure: row.last_failure,
  };
}
