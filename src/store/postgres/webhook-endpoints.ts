import { DEFAULT_MAX_IN_FLIGHT, type DeliveryAttempt } from '../../domain/webhook.js';
import type { WebhookEndpoints } from '../store.js';
import type { Pooled, Statement } from './connection.js';
import { changingEndpoints } from './endpoints-version.js';
import type { EventLog } from './events.js';
import { ATTEMPTS, attemptArrays, ENDPOINT_COLUMNS, toEndpoint, type EndpointRow } from './webhook-rows.js';

const DELIVERY_COLUMNS = `endpoint_id AS "endpointId", event_id AS "eventId", seq, attempted_at AS "attemptedAt", status, error,
  duration_ms AS "durationMs", response_body AS "responseBody"`;

/**
 * Ends the current claim of the lease without giving the lease up: its holder's worker is refused
 * at its next flush, and the holder's next round claims it anew (a worker that starts from the
 * store's place, once the old one stopped); no other instance can take it meanwhile, so two never
 * send to one endpoint at once.
 */
const NEW_CLAIM = "lease_since = lease_since + interval '1 millisecond'";

const STATEMENTS = {
  // One statement, one snapshot: an event committed before it is behind the endpoint's start, one committed after it is delivered.
  add: changingEndpoints(
    'webhook-add',
    `INSERT INTO webhook_endpoints (id, url, description, secret, enabled, created_at, delivered_seq, failures, max_in_flight)
     SELECT $1, $2, $3, $4, true, $5, events_head, 0, $6 FROM store_state WHERE id = 1
     RETURNING ${ENDPOINT_COLUMNS}`,
    '$7',
  ),
  list: { name: 'webhook-list', text: `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints ORDER BY created_at, id` },
  get: { name: 'webhook-get', text: `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = $1` },
  // Its delivery log goes with it (ON DELETE CASCADE), in the same statement.
  remove: changingEndpoints('webhook-remove', 'DELETE FROM webhook_endpoints WHERE id = $1 RETURNING id', '$2'),
  disable: changingEndpoints(
    'webhook-disable',
    'UPDATE webhook_endpoints SET enabled = false, disabled_reason = $2, lease_holder = NULL, lease_until = NULL WHERE id = $1 RETURNING id',
    '$3',
  ),
  enable: changingEndpoints(
    'webhook-enable',
    `UPDATE webhook_endpoints SET enabled = true, disabled_reason = NULL, failures = 0, next_attempt_at = NULL, retrying = '', ${NEW_CLAIM} WHERE id = $1 RETURNING id`,
    '$2',
  ),
  replay: changingEndpoints(
    'webhook-replay',
    `UPDATE webhook_endpoints SET delivered_seq = $2, delivered_above = '', retrying = '', failures = 0, next_attempt_at = NULL, ${NEW_CLAIM} WHERE id = $1 RETURNING id`,
    '$3',
  ),
  // The right-hand sides read the row as it was: the old secret becomes the previous one.
  rotate: changingEndpoints(
    'webhook-rotate',
    `UPDATE webhook_endpoints SET previous_secret = secret, previous_secret_until = $3, secret = $2 WHERE id = $1
     RETURNING ${ENDPOINT_COLUMNS}`,
    '$4',
  ),
  // The endpoints version moves with it, so the running worker is given it at once (decisions 10.11).
  update: changingEndpoints('webhook-update', `UPDATE webhook_endpoints SET max_in_flight = $2 WHERE id = $1 RETURNING ${ENDPOINT_COLUMNS}`, '$3'),
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
} as const satisfies Record<string, Statement>;

/** An attempt as selected: seq still a bigint. */
type DeliveryRow = Omit<DeliveryAttempt, 'seq'> & { seq: bigint };

/**
 * The PostgreSQL store's webhook endpoints and their delivery log, as operators manage and read
 * them. Every write is one statement, so it needs no transaction held across round trips and no
 * session state: it works behind a transaction-mode pooler. Every write that changes an endpoint
 * bumps the endpoints version in that statement (changingEndpoints).
 */
export function webhookEndpoints({ query }: Pooled, log: Pick<EventLog, 'channel' | 'endpointsChanged'>): WebhookEndpoints {
  const { channel } = log;
  /** After an operator's change commits, tells this process's listeners at once (the others hear the NOTIFY, or read the version). */
  const told = (changed: boolean): boolean => {
    if (changed) log.endpointsChanged.emit();
    return changed;
  };
  return {
    async addEndpoint(e) {
      const { rows } = await query<EndpointRow>(STATEMENTS.add, [
        e.id,
        e.url,
        e.description,
        e.secret,
        e.createdAt.toISOString(),
        e.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT,
        channel,
      ]);
      told(true);
      return toEndpoint(rows[0]!);
    },
    listEndpoints: async () => (await query<EndpointRow>(STATEMENTS.list)).rows.map(toEndpoint),
    async getEndpoint(id) {
      const row = (await query<EndpointRow>(STATEMENTS.get, [id])).rows[0];
      return row && toEndpoint(row);
    },
    removeEndpoint: async (id) => told((await query(STATEMENTS.remove, [id, channel])).rowCount === 1),
    disableEndpoint: async (id, why) => told((await query(STATEMENTS.disable, [id, why, channel])).rowCount === 1),
    enableEndpoint: async (id) => told((await query(STATEMENTS.enable, [id, channel])).rowCount === 1),
    async rotateSecret(id, secret, previousUntil) {
      const row = (await query<EndpointRow>(STATEMENTS.rotate, [id, secret, previousUntil.toISOString(), channel])).rows[0];
      told(row !== undefined);
      return row && toEndpoint(row);
    },
    async updateEndpoint(id, changes) {
      const row = (await query<EndpointRow>(STATEMENTS.update, [id, changes.maxInFlight, channel])).rows[0];
      told(row !== undefined);
      return row && toEndpoint(row);
    },
    replayFrom: async (id, after) => told((await query(STATEMENTS.replay, [id, after, channel])).rowCount === 1),
    recordAttempts: async (attempts) => void (await query(STATEMENTS.record, attemptArrays(attempts))),
    listDeliveries: async (id, limit) => (await query<DeliveryRow>(STATEMENTS.deliveries, [id, limit])).rows.map(toAttempt),
  };
}

function toAttempt(row: DeliveryRow): DeliveryAttempt {
  return { ...row, seq: Number(row.seq) };
}
