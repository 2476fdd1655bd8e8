import { isDelivered, type AttemptOutcome } from '../domain/webhook.js';
import type { SentAttempt } from './sender.js';

/** Sends one signed message to a URL (WebhookSender.send). */
export type SendMessage = (url: string, message: { id: string; body: string; headers: Record<string, string> }) => Promise<SentAttempt>;

/** What the metrics see of the deliveries. */
export interface WebhookObserver {
  /** One attempt to an endpoint: how it ended and how long it took. */
  attempted(endpointId: string, result: AttemptResult, durationMs: number): void;
  /** An event of the log delivered: the time from its commit to the receiver's 2xx. */
  delivered(latencyMs: number): void;
}

/** An attempt as the metrics count it: a 2xx, another status, or no status (a timeout, a network error, a refused address). */
export type AttemptResult = 'delivered' | 'http_error' | 'error';

/** Where the deliveries' lines go (the app's logger). */
export interface WebhookLog {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

/** What an outcome counts as in the metrics. */
export function attemptResult(outcome: AttemptOutcome): AttemptResult {
  if (!('status' in outcome)) return 'error';
  return isDelivered(outcome) ? 'delivered' : 'http_error';
}
