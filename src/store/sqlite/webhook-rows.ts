import { decodeRetrying, decodeSeqs } from '../../domain/webhook-position.js';
import type { WebhookEndpoint } from '../../domain/webhook.js';

/** A webhook_endpoints row as both webhook ports select it. */
export interface EndpointRow {
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
  max_in_flight: number;
  delivered_above: string;
  retrying: string;
}

export const ENDPOINT_COLUMNS = `id, url, description, secret, previous_secret, previous_secret_until, enabled, disabled_reason, created_at,
  delivered_seq, failures, next_attempt_at, last_failure_at, last_failure, max_in_flight, delivered_above, retrying`;

export function toEndpoint(row: EndpointRow): WebhookEndpoint {
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
    maxInFlight: row.max_in_flight,
    deliveredAbove: decodeSeqs(row.delivered_above),
    retrying: decodeRetrying(row.retrying),
  };
}
