import { encodeRetrying, encodeSeqs } from '../../domain/webhook-position.js';
import type { WebhookDeliveries } from '../store.js';
import type { Pooled, Statement } from './connection.js';
import { endpointsBump, READ_ENDPOINTS_VERSION } from './endpoints-version.js';
import type { EventLog } from './events.js';
import { ATTEMPTS, attemptArrays, ENDPOINT_COLUMNS, toEndpoint, type EndpointRow } from './webhook-rows.js';

const STATEMENTS = {
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
  // One statement, so atomic: the UPDATE checks the lease and locks the row (as FOR UPDATE would). A
  // takeover or an operator's disable or removal either commits first (then no row matches: the
  // progress is not written) or waits for this one. The attempts are logged either way, as they
  // were sent, unless the endpoint is gone (decisions 10.10).
  progress: {
    name: 'webhook-progress',
    text: `WITH e AS (
             UPDATE webhook_endpoints SET delivered_seq = $3, failures = $4, next_attempt_at = $5, last_failure_at = $6, last_failure = $7,
               enabled = $8::text IS NULL, disabled_reason = $8::text,
               lease_holder = CASE WHEN $8::text IS NULL THEN lease_holder END,
               lease_until = CASE WHEN $8::text IS NULL THEN lease_until END,
               delivered_above = $18, retrying = $19
             WHERE id = $1 AND lease_holder = $2 AND lease_until > now() AND enabled AND ($17::timestamptz IS NULL OR lease_since = $17)
             RETURNING id),
           -- The row kept from a removal until the attempts are in (one removed meanwhile has none logged):
           -- by the UPDATE, or when the fence refused it by a lock of its own (a row this statement updates
           -- is not locked again by it: the lock would skip it).
           locked AS (SELECT id FROM webhook_endpoints WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM e) FOR KEY SHARE),
           kept AS (SELECT id FROM e UNION ALL SELECT id FROM locked),
           inserted AS (
             INSERT INTO webhook_deliveries (endpoint_id, event_id, seq, attempted_at, status, error, duration_ms, response_body)
             SELECT kept.id, a.event_id, a.seq, a.attempted_at, a.status, a.error, a.duration_ms, a.response_body
             FROM kept, ${ATTEMPTS(9)}
             ORDER BY a.ordinality),
           -- A worker's own disable (410, the schedule used up) is a change of the endpoints every dispatcher acts on.
           ${endpointsBump('$8::text IS NOT NULL AND EXISTS (SELECT 1 FROM e)', '$20')}
           SELECT count(*)::integer AS recorded FROM e, (SELECT count(*) FROM bumped) b`,
  },
} as const satisfies Record<string, Statement>;

/**
 * The PostgreSQL store's webhook deliveries. Every write is one statement, so it needs no
 * transaction held across round trips and no session state: leases are rows with an expiry on the
 * server's clock, and it works behind a transaction-mode pooler.
 */
export function webhookDeliveries({ query }: Pooled, log: Pick<EventLog, 'channel' | 'endpointsChanged'>): WebhookDeliveries {
  return {
    leaseEndpoints: async (holder, leaseMs) =>
      (await query<EndpointRow & { leaseClaimedAt: Date }>(STATEMENTS.lease, [holder, leaseMs])).rows.map((row) => ({ ...toEndpoint(row), leaseClaimedAt: row.leaseClaimedAt })),
    releaseLeases: async (holder) => void (await query(STATEMENTS.release, [holder])),
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
        encodeSeqs(p.deliveredAbove),
        encodeRetrying(p.retrying),
        log.channel,
      ];
      const held = (await query<{ recorded: number }>(STATEMENTS.progress, values)).rows[0]!.recorded === 1;
      if (held && p.disable !== undefined) log.endpointsChanged.emit();
      return held;
    },
    endpointsVersion: async () => Number((await query<{ version: bigint }>(READ_ENDPOINTS_VERSION)).rows[0]!.version),
    onEndpointsChanged: (listener) => log.endpointsChanged.on(listener),
  };
}
