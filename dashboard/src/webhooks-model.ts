import type { WebhookEndpoint } from '@petstore/inventory-client';
import { formatCount } from './messages.js';

/** One endpoint as the Webhooks panel shows it: every cell's text, and the time of the last failure for a <time>. */
export interface WebhookRow {
  id: string;
  url: string;
  state: string;
  /** Requests open to it at once, at most. */
  inFlight: string;
  delivered: string;
  backlog: string;
  lastFailure: string;
  lastFailureAt: string | null;
}

/** The state in words: enabled, how many events wait for a retry, or disabled and why. */
export function webhookState(endpoint: Pick<WebhookEndpoint, 'enabled' | 'disabledReason' | 'failures' | 'retrying'>): string {
  if (!endpoint.enabled) {
    // The service's reasons start "disabled by ..." or say what happened; "Disabled: disabled by" would stutter.
    const reason = (endpoint.disabledReason ?? 'no reason recorded').replace(/^disabled /, '');
    return `Disabled: ${reason}`;
  }
  if (endpoint.retrying === 0) return 'Enabled';
  const events = `${formatCount(endpoint.retrying)} event${endpoint.retrying === 1 ? '' : 's'}`;
  return `Enabled, retrying ${events} (${formatCount(endpoint.failures)} failed)`;
}

/** What the panel shows of an endpoint; the answer holds no secret, and nothing here would show one. */
export function webhookRow(endpoint: WebhookEndpoint): WebhookRow {
  return {
    id: endpoint.id,
    url: endpoint.url,
    state: webhookState(endpoint),
    inFlight: endpoint.maxInFlight === 1 ? '1 (in seq order)' : `up to ${endpoint.maxInFlight}`,
    delivered: `seq ${formatCount(endpoint.deliveredSeq)}`,
    backlog: formatCount(endpoint.backlog),
    lastFailure: endpoint.lastFailure ?? '—',
    lastFailureAt: endpoint.lastFailure === null ? null : endpoint.lastFailureAt,
  };
}
