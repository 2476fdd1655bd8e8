import type Database from 'better-sqlite3';
import { DEFAULT_MAX_IN_FLIGHT, type DeliveryAttempt } from '../../domain/webhook.js';
import type { AppendedSignal } from '../appended.js';
import type { WebhookEndpoints } from '../store.js';
import { committed, LIMIT, type Run } from './connection.js';
import { changingEndpoints } from './endpoints-version.js';
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
 * rare acts, on the event loop's connection, each one IMMEDIATE transaction that bumps the endpoints version
 * (cluster workers share the file, and the write lock taken first means no check can go stale
 * before its write); a test delivery's attempt commits in the writer, as the workers' do.
 */
export function webhookEndpoints(
  db: Database.Database,
  run: Run,
  writer: Pick<ChangeWriter, 'recordAttempts'>,
  endpointsChanged: AppendedSignal,
): WebhookEndpoints {
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
    // The endpoints version moves with it, so the running worker is given it at once (decisions 10.11).
    update: db.prepare<[number, string], EndpointRow>(`UPDATE webhook_endpoints SET max_in_flight = ? WHERE id = ? RETURNING ${ENDPOINT_COLUMNS}`),
    deliveries: db.prepare<[string, number], DeliveryRow>(
      `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE endpoint_id = ? ORDER BY id DESC LIMIT ${LIMIT}`,
    ),
  };
  // Every write that changes an endpoint goes through changingEndpoints: the endpoints version moves with it.
  const one = (result: { changes: number }) => result.changes === 1;
  const add = changingEndpoints(db, (row: NewRow) => stmt.add.get(row)!, () => true);
  const remove = changingEndpoints(
    db,
    (id: string) => {
      stmt.removeDeliveries.run(id);
      return stmt.remove.run(id);
    },
    one,
  );
  const disable = changingEndpoints(db, (why: string, id: string) => stmt.disable.run(why, id), one);
  const enable = changingEndpoints(db, (id: string) => stmt.enable.run(id), one);
  const replay = changingEndpoints(db, (after: number, id: string) => stmt.replay.run(after, id), one);
  const rotate = changingEndpoints(db, (until: string, secret: string, id: string) => stmt.rotate.get(until, secret, id), (row) => row !== undefined);
  const update = changingEndpoints(db, (maxInFlight: number, id: string) => stmt.update.get(maxInFlight, id), (row) => row !== undefined);
  /** After an operator's change commits, tells this process's listeners (the other processes read the version). */
  const told = (changed: boolean): boolean => {
    if (changed) endpointsChanged.emit();
    return changed;
  };

  return {
    addEndpoint: async (endpoint) =>
      run(() => {
        const row = add({
          id: endpoint.id,
          url: endpoint.url,
          description: endpoint.description,
          secret: endpoint.secret,
          created_at: endpoint.createdAt.toISOString(),
          max_in_flight: endpoint.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT,
        });
        told(true);
        return toEndpoint(row);
      }),
    listEndpoints: async () => run(() => stmt.list.all().map(toEndpoint)),
    getEndpoint: async (id) =>
      run(() => {
        const row = stmt.get.get(id);
        return row && toEndpoint(row);
      }),
    removeEndpoint: async (id) => run(() => told(one(remove(id)))),
    disableEndpoint: async (id, why) => run(() => told(one(disable(why, id)))),
    enableEndpoint: async (id) => run(() => told(one(enable(id)))),
    rotateSecret: async (id, secret, previousUntil) =>
      run(() => {
        const row = rotate(previousUntil.toISOString(), secret, id);
        told(row !== undefined);
        return row && toEndpoint(row);
      }),
    updateEndpoint: async (id, changes) =>
      run(() => {
        const row = update(changes.maxInFlight, id);
        told(row !== undefined);
        return row && toEndpoint(row);
      }),
    replayFrom: async (id, after) => run(() => told(one(replay(after, id)))),
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
