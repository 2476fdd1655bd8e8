import type { DeliveryAttempt } from '../../domain/webhook.js';
import type { WebhookEndpointBody } from '../../schemas/webhook.js';

/**
 * The failure `webhooks list` shows for an endpoint: its last failure while no attempt has
 * succeeded since, else none. The endpoint's `lastFailure` is kept after later deliveries (the
 * API's history of it); an operator asking "is it failing?" is answered by the newest attempt.
 * `newest` is the newest attempt of the delivery log, undefined when it holds none (then nothing
 * is known to have succeeded since).
 */
export function currentFailure(endpoint: Pick<WebhookEndpointBody, 'lastFailure' | 'lastFailureAt'>, newest: Pick<DeliveryAttempt, 'attemptedAt' | 'status'> | undefined): { at: Date | null; text: string } | null {
  if (endpoint.lastFailure === null) return null;
  const at = endpoint.lastFailureAt === null ? null : new Date(endpoint.lastFailureAt);
  const succeeded = newest !== undefined && newest.status !== null && newest.status >= 200 && newest.status < 300;
  if (succeeded && (at === null || newest.attemptedAt.getTime() >= at.getTime())) return null;
  return { at, text: endpoint.lastFailure };
}
