import type Database from 'better-sqlite3';
import { DEFAULT_MAX_IN_FLIGHT, type DeliveryAttempt } from '../../domain/webhook.js';
import type { WebhookEndpoints } from '../store.js';
import { committed, LIMIT, type Run } from './connection.js';
import { DELIVERY_COLUMNS, deliveryRow, type DeliveryRow } from './record-progress.js';
import { ENDPOINT_COLUMNS, toEndpoint, type EndpointRow } from './webhook-rows.js';
import type { ChangeWriter } from './writer.js';

/**
 * Ends the current claim of the lease without giving the lease up: its holder's worker is refused
 * at its next flush, and the holder's next round claims it anew (a worker that starts from the
 * store's place, once the old one stopped); no other instance can take it meanwhile, so two never
 * send to one endpoint at once.
 */
const NEW_CLAIM = 'lease_since = coalesce(lease_since, 0) + 1';

/**
 * The SQLite store's webhook endpoints and their delivery log, as operators manage and read them:
 * rare acts, on the event loop's connection, each one statement or one IMMEDIATE transaction
 * (cluster workers share the file, and the write lock taken first means no check can go stale
 * before its write); a test delivery's attempt commits in the writer, as the workers' do.
 */
export function webhookEndpoints(db: Database.Database, run: Run, writer: Pick<ChangeWriter, 'recordAttempts'>): WebhookEndpoints {
  const stmt = {
    // The head is read under the write lock the insert takes, so no event can commit between the two.
    add: db.prepare<[NewRow], EndpointRow>(
      `INSERT INTO webhook_endpoints (id, url, description, secret, enabled, created_at, delivered_seq, failures, max_in_flight)
       SELECT @id, @url, @description, @secret, 1, @created_at, events_head, 0, @max_in_flight FROM store_state WHERE id = 1
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
      `UPDATE webhook_endpoints SET enabled = 1, disabled_reason = NULL, failures = 0, next_attempt_at = NULL, retrying = '', ${NEW_CLAIM} WHERE id = ?`,
    ),
    replay: db.prepare<[number, string]>(
      `UPDATE webhook_endpoints SET delivered_seq = ?, delivered_above = '', retrying = '', failures = 0, next_attempt_at = NULL, ${NEW_CLAIM} WHERE id = ?`,
    ),
    // The right-hand sides read the row as it was: the old secret becomes the previous one.
    rotate: db.prepare<[string, string, string], EndpointRow>(
      `UPDATE webhook_endpoints SET previous_secret = secret, previous_secret_until = ?, secret = ? WHERE id = ?
       RETURNING ${ENDPOINT_COLUMNS}`,
    ),
    // The worker running takes it at the next lease round, with the endpoint's latest url and secrets.
    update: db.prepare<[number, string], EndpointRow>(`UPDATE webhook_endpoints SET max_in_flight = ? WHERE id = ? RETURNING ${ENDPOINT_COLUMNS}`),
    deliveries: db.prepare<[string, number], DeliveryRow>(
      `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE endpoint_id = ? ORDER BY id DESC LIMIT ${LIMIT}`,
    ),
  };
  const remove = db.transaction((id: string) => {
    stmt.removeDeliveries.run(id);
    return stmt.remove.run(id).changes === 1;
  });

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
            max_in_flight: endpoint.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT,
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
    updateEndpoint: async (id, changes) =>
      run(() => {
        const row = stmt.update.get(changes.maxInFlight, id);
        return row && toEndpoint(row);
      }),
    replayFrom: async (id, after) => run(() => stmt.replay.run(after, id).changes === 1),
    recordAttempts: (attempts) => committed(run, () => writer.recordAttempts(attempts.map((a) => deliveryRow(a)))),
    listDeliveries: async (id, limit) => run(() => stmt.deliveries.all(id, limit).map(toAttempt)),
  };
}

interface NewRow {
  id: string;
  url: string;
  description: string | null;
  secret: string;
  created_at: string;
  max_in_flight: number;
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
