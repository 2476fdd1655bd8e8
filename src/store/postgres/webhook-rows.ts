import { decodeRetrying, decodeSeqs } from '../../domain/webhook-position.js';
import type { DeliveryAttempt, WebhookEndpoint } from '../../domain/webhook.js';

/** Selected under the names of WebhookEndpoint; pg returns TIMESTAMPTZ as Date, and BIGINT as bigint (made a number below). */
export const ENDPOINT_COLUMNS = `id, url, description, secret, previous_secret AS "previousSecret", previous_secret_until AS "previousSecretUntil",
  enabled, disabled_reason AS "disabledReason", created_at AS "createdAt", delivered_seq AS "deliveredSeq", failures,
  next_attempt_at AS "nextAttemptAt", last_failure_at AS "lastFailureAt", last_failure AS "lastFailure", max_in_flight AS "maxInFlight",
  delivered_above AS "deliveredAbove", retrying`;

/** An endpoint as selected: deliveredSeq still a bigint, the place above it still text. */
export type EndpointRow = Omit<WebhookEndpoint, 'deliveredSeq' | 'deliveredAbove' | 'retrying'> & { deliveredSeq: bigint; deliveredAbove: string; retrying: string };

export function toEndpoint(row: EndpointRow): WebhookEndpoint {
  return { ...row, deliveredSeq: Number(row.deliveredSeq), deliveredAbove: decodeSeqs(row.deliveredAbove), retrying: decodeRetrying(row.retrying) };
}

/** Attempts as parallel arrays ($N to $N+7), one row each in the given order (ordinality): many attempts in one INSERT. */
export const ATTEMPTS = (from: number) =>
  `unnest($${from}::text[], $${from + 1}::text[], $${from + 2}::bigint[], $${from + 3}::timestamptz[], $${from + 4}::integer[],
     $${from + 5}::text[], $${from + 6}::integer[], $${from + 7}::text[]) WITH ORDINALITY
   AS a (endpoint_id, event_id, seq, attempted_at, status, error, duration_ms, response_body, ordinality)`;

/** The attempts as the eight parallel arrays of ATTEMPTS. */
export function attemptArrays(attempts: readonly DeliveryAttempt[]): unknown[][] {
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
