import type { DeliveryAttempt, WebhookEndpoint } from '../../domain/webhook.js';
import { inBatches, PRUNE_BATCH } from '../pruning.js';
import type { Webhooks } from '../store.js';
import type { Pooled, Statement } from './connection.js';

/** Selected under the names of WebhookEndpoint; pg returns TIMESTAMPTZ as Date, and BIGINT as bigint (made a number below). */
const ENDPOINT_COLUMNS = `id, url, description, secret, previous_secret AS "previousSecret", previous_secret_until AS "previousSecretUntil",
  enabled, disabled_reason AS "disabledReason", created_at AS "createdAt", delivered_seq AS "deliveredSeq", failures,
  next_attempt_at AS "nextAttemptAt", last_failure_at AS "lastFailureAt", last_failure AS "lastFailure"`;
const DELIVERY_COLUMNS = `endpoint_id AS "endpointId", event_id AS "eventId", seq, attempted_at AS "attemptedAt", status, error,
  duration_ms AS "durationMs", response_body AS "responseBody"`;

/**
 * Ends the current claim of the lease without giving the lease up: its holder's worker is refused
 * at its next flush, and the holder's next round claims it anew (a worker that starts from the
 * store's place, once the old one stopped); no other instance can take it meanwhile, so two never
 * send to one endpoint at once.
 */
const NEW_CLAIM = "lease_since = lease_since + interval '1 millisecond'";

/** Attempts as parallel arrays ($N to $N+7), one row each in the given order (ordinality): many attempts in one INSERT. */
const ATTEMPTS = (from: number) =>
  `unnest($${from}::text[], $${from + 1}::text[], $${from + 2}::bigint[], $${from + 3}::timestamptz[], $${from + 4}::integer[],
     $${from + 5}::text[], $${from + 6}::integer[], $${from + 7}::text[]) WITH ORDINALITY
   AS a (endpoint_id, event_id, seq, attempted_at, status, error, duration_ms, response_body, ordinality)`;

const STATEMENTS = {
  // One statement, one snapshot: an event committed before it is behind the endpoint's start, one committed after it is delivered.
  add: {
    name: 'webhook-add',
    text: `INSERT INTO webhook_endpoints (id, url, description, secret, enabled, created_at, delivered_seq, failures)
           SELECT $1, $2, $3, $4, true, $5, events_head, 0 FROM store_state WHERE id = 1
           RETURNING ${ENDPOINT_COLUMNS}`,
  },
  list: { name: 'webhook-list', text: `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints ORDER BY created_at, id` },
  get: { name: 'webhook-get', text: `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = $1` },
  // Its delivery log goes with it (ON DELETE CASCADE), in the same statement.
  remove: { name: 'webhook-remove', text: 'DELETE FROM webhook_endpoints WHERE id = $1' },
  disable: {
    name: 'webhook-disable',
    text: 'UPDATE webhook_endpoints SET enabled = false, disabled_reason = $2, lease_holder = NULL, lease_until = NULL WHERE id = $1',
  },
  enable: {
    name: 'webhook-enable',
    text: `UPDATE webhook_endpoints SET enabled = true, disabled_reason = NULL, failures = 0, next_attempt_at = NULL, ${NEW_CLAIM} WHERE id = $1`,
  },
  replay: {
    name: 'webhook-replay',
    text: `UPDATE webhook_endpoints SET delivered_seq = $2, failures = 0, next_attempt_at = NULL, ${NEW_CLAIM} WHERE id = $1`,
  },
  // The right-hand sides read the row as it was: the old secret becomes the previous one.
  rotate: {
    name: 'webhook-rotate',
    text: `UPDATE webhook_endpoints SET previous_secret = secret, previous_secret_until = $3, secret = $2 WHERE id = $1
           RETURNING ${ENDPOINT_COLUMNS}`,
  },
  // On the server's clock. A second holder's UPDATE waits for the first's row lock, then checks the
  // row as the first left it (read committed re-reads an updated row): it finds the lease live and
  // skips it, so two holders never both claim an endpoint.
  lease: {
    name: 'webhook-lease',
    text: `WITH held AS (
             UPDATE webhook_endpoints SET lease_holder = $1, lease_until = now() + $2::double precision * interval '1 millisecond',
               -- Read as the row was: a live lease of this holder is renewed (its claim time kept); any
               -- other is a new claim, in whole milliseconds (as a Date holds it), always after the last.
               lease_since = CASE WHEN lease_holder = $1 AND lease_until >= now() THEN lease_since
                 ELSE GREATEST(date_trunc('milliseconds', now()), lease_since + interval '1 millisecond') END
             WHERE enabled AND (lease_holder = $1 OR lease_until IS NULL OR lease_until < now())
             RETURNING ${ENDPOINT_COLUMNS}, lease_since AS "leaseClaimedAt")
           SELECT * FROM held ORDER BY "createdAt", id`,
  },
  release: { name: 'webhook-release', text: 'UPDATE webhook_endpoints SET lease_holder = NULL, lease_until = NULL WHERE lease_holder = $1' },
  // One statement, so atomic: the UPDATE checks the lease and locks the row (as FOR UPDATE would), and
  // the attempts are inserted only for the row it updated. A takeover or an operator's disable or
  // removal either commits first (then no row matches: nothing is written) or waits for this one.
  progress: {
    name: 'webhook-progress',
    text: `WITH e AS (
             UPDATE webhook_endpoints SET delivered_seq = $3, failures = $4, next_attempt_at = $5, last_failure_at = $6, last_failure = $7,
               enabled = $8::text IS NULL, disabled_reason = $8::text,
               lease_holder = CASE WHEN $8::text IS NULL THEN lease_holder END,
               lease_until = CASE WHEN $8::text IS NULL THEN lease_until END
             WHERE id = $1 AND lease_holder = $2 AND lease_until > now() AND enabled AND ($17::timestamptz IS NULL OR lease_since = $17)
             RETURNING id),
           inserted AS (
             INSERT INTO webhook_deliveries (endpoint_id, event_id, seq, attempted_at, status, error, duration_ms, response_body)
             SELECT e.id, a.event_id, a.seq, a.attempted_at, a.status, a.error, a.duration_ms, a.response_body
             FROM e, ${ATTEMPTS(9)}
             ORDER BY a.ordinality)
           SELECT count(*)::integer AS recorded FROM e`,
  },
  // An endpoint removed meanwhile is skipped (its row lock finds it gone), not refused by the foreign key.
  record: {
    name: 'webhook-record',
    text: `INSERT INTO webhook_deliveries (endpoint_id, event_id, seq, attempted_at, status, error, duration_ms, response_body)
           SELECT a.endpoint_id, a.event_id, a.seq, a.attempted_at, a.status, a.error, a.duration_ms, a.response_body
           FROM ${ATTEMPTS(1)} JOIN webhook_endpoints e ON e.id = a.endpoint_id
           ORDER BY a.ordinality
           FOR KEY SHARE OF e`,
  },
  deliveries: {
    name: 'webhook-deliveries',
    text: `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE endpoint_id = $1 ORDER BY id DESC LIMIT $2`,
  },
  purge: {
    name: 'webhook-purge',
    text: 'DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM webhook_deliveries WHERE attempted_at < $1 LIMIT $2)',
  },
} as const satisfies Record<string, Statement>;

/** An endpoint as selected: deliveredSeq still a bigint. */
type EndpointRow = Omit<WebhookEndpoint, 'deliveredSeq'> & { deliveredSeq: bigint };
/** An attempt as selected: seq still a bigint. */
type DeliveryRow = Omit<DeliveryAttempt, 'seq'> & { seq: bigint };

/**
 * The PostgreSQL store's webhook endpoints and delivery log. Every write is one statement, so it
 * needs no transaction held across round trips and no session state: leases are rows with an
 * expiry on the server's clock, and it works behind a transaction-mode pooler.
 */
export function webhooks({ query }: Pooled): Webhooks {
  return {
    async addEndpoint(e) {
      const { rows } = await query<EndpointRow>(STATEMENTS.add, [e.id, e.url, e.description, e.secret, e.createdAt.toISOString()]);
      return toEndpoint(rows[0]!);
    },
    listEndpoints: async () => (await query<EndpointRow>(STATEMENTS.list)).rows.map(toEndpoint),
    async getEndpoint(id) {
      const row = (await query<EndpointRow>(STATEMENTS.get, [id])).rows[0];
      return row && toEndpoint(row);
    },
    removeEndpoint: async (id) => (await query(STATEMENTS.remove, [id])).rowCount === 1,
    disableEndpoint: async (id, why) => (await query(STATEMENTS.disable, [id, why])).rowCount === 1,
    enableEndpoint: async (id) => (await query(STATEMENTS.enable, [id])).rowCount === 1,
    async rotateSecret(id, secret, previousUntil) {
      const row = (await query<EndpointRow>(STATEMENTS.rotate, [id, secret, previousUntil.toISOString()])).rows[0];
      return row && toEndpoint(row);
    },
    leaseEndpoints: async (holder, leaseMs) =>
      (await query<EndpointRow & { leaseClaimedAt: Date }>(STATEMENTS.lease, [holder, leaseMs])).rows.map((row) => ({ ...toEndpoint(row), leaseClaimedAt: row.leaseClaimedAt })),
    releaseLeases: async (holder) => void (await query(STATEMENTS.release, [holder])),
    replayFrom: async (id, after) => (await query(STATEMENTS.replay, [id, after])).rowCount === 1,
    async recordProgress(id, holder, p, claimedAt) {
      const values = [
        id,
        holder,
        p.deliveredSeq,
        p.failures,
        p.nextAttemptAt?.toISOString() ?? null,
        p.lastFailureAt?.toISOString() ?? null,
        p.lastFailure,
        p.disable ?? null,
        ...attemptArrays(p.attempts.map((a) => ({ ...a, endpointId: id }))),
        claimedAt?.toISOString() ?? null,
      ];
      return (await query<{ recorded: number }>(STATEMENTS.progress, values)).rows[0]!.recorded === 1;
    },
    recordAttempts: async (attempts) => void (await query(STATEMENTS.record, attemptArrays(attempts))),
    listDeliveries: async (id, limit) => (await query<DeliveryRow>(STATEMENTS.deliveries, [id, limit])).rows.map(toAttempt),
    purgeDeliveries: (before) =>
      inBatches(0, async () => {
        const deleted = (await query(STATEMENTS.purge, [before.toISOString(), PRUNE_BATCH])).rowCount ?? 0;
        return deleted === PRUNE_BATCH ? { deleted, next: 0 } : { deleted };
      }),
  };
}

/** The attempts as the eight parallel arrays of ATTEMPTS. */
function attemptArrays(attempts: readonly DeliveryAttempt[]): unknown[][] {
  return [
    attempts.map((a) => a.endpointId),
    attempts.map((a) => a.eventId),
    attempts.map((a) => a.seq),
    attempts.map((a) => a.attemptedAt.toISOString()),
    attempts.map((a) => a.status),
    attempts.map((a) => a.error),
    // An INTEGER column: the timer's fraction of a millisecond is not kept.
    attempts.map((a) => Math.round(a.durationMs)),
    attempts.map((a) => a.responseBody),
  ];
}

function toEndpoint(row: EndpointRow): WebhookEndpoint {
  return { ...row, deliveredSeq: Number(row.deliveredSeq) };
}

function toAttempt(row: DeliveryRow): DeliveryAttempt {
  return { ...row, seq: Number(row.seq) };
}
