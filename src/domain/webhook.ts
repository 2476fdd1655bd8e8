/**
 * Webhook endpoints and what delivering to them means: the rule that turns one attempt's outcome
 * into the endpoint's next step lives here, once, for the dispatcher, the CLI's test and the tests.
 */

/** The two events a webhook receiver may get that are not in the log: a test (CLI), and a reset past a pruned stretch. */
export const WEBHOOK_EVENT_TYPES = ['webhook.test', 'webhook.reset'] as const;

/** An endpoint as stored. The secrets are never logged, listed or put in an error message. */
export interface WebhookEndpoint {
  /** `whk_` + 16 random bytes, base64url. */
  id: string;
  url: string;
  description: string | null;
  /** `whsec_` + base64 of 32 random bytes (Standard Webhooks): signs every delivery. */
  secret: string;
  /** The secret before the last rotation, still signing beside the new one until `previousSecretUntil`. */
  previousSecret: string | null;
  previousSecretUntil: Date | null;
  enabled: boolean;
  /** Why it was disabled (by an operator, a 410, retries used up); null while enabled. */
  disabledReason: string | null;
  createdAt: Date;
  /** Every event up to this seq was delivered (or passed over by a reset): the next is the first above it. */
  deliveredSeq: number;
  /** The most failures in a row of any event waiting for its retry (0: none is). */
  failures: number;
  /** The whole endpoint waits until then (a Retry-After; with maxInFlight 1, any retry's wait); null: it does not. */
  nextAttemptAt: Date | null;
  /** The last failed attempt's time and what went wrong (status or error), kept after later deliveries; null when none ever failed. */
  lastFailureAt: Date | null;
  lastFailure: string | null;
  /** Requests open to it at most (1 to 100): events of different pets go at once up to this; 1 is strict seq order (decisions 10.4). */
  maxInFlight: number;
  /** Seqs above deliveredSeq already delivered (events of other pets that went ahead), ascending. */
  deliveredAbove: number[];
  /** Events above deliveredSeq that failed and wait for their retry, each with its own count and time. */
  retrying: RetryingEvent[];
}

/** One event waiting for its retry: the failures in a row it had and when it is tried again. */
export interface RetryingEvent {
  seq: number;
  failures: number;
  at: Date;
}

/** Requests open to an endpoint at most, the bounds `webhooks add` and `update` accept. */
export const MAX_IN_FLIGHT_MIN = 1;
export const MAX_IN_FLIGHT_MAX = 100;
/** What a new endpoint gets unless told (endpoints made before there was a choice keep 1). */
export const DEFAULT_MAX_IN_FLIGHT = 16;

/** What adding an endpoint needs; it starts at the log's head (WebhookEndpoints.addEndpoint). */
export interface NewWebhookEndpoint {
  id: string;
  url: string;
  description: string | null;
  secret: string;
  createdAt: Date;
  /** Default DEFAULT_MAX_IN_FLIGHT. */
  maxInFlight?: number;
}

/** One attempt to deliver one event to one endpoint, as the delivery log keeps it. */
export interface DeliveryAttempt {
  endpointId: string;
  /** The webhook-id sent: the event's id (evt_<seq>), or a reset's or a test's. */
  eventId: string;
  /** The event's seq; for a reset, the head it names; for a test, 0. */
  seq: number;
  attemptedAt: Date;
  /** The receiver's status, or null when none came (then `error` says why). */
  status: number | null;
  /** A network error, a timeout or a refused address; null when a status came. */
  error: string | null;
  durationMs: number;
  /** The first 1 KiB of the receiver's answer. */
  responseBody: string | null;
}

/**
 * What one flush of a dispatcher records for one endpoint, in one transaction: the attempts since
 * the last flush and where the endpoint now stands.
 */
export interface DeliveryProgress {
  attempts: DeliveryAttempt[];
  /** Every event up to it delivered ... */
  deliveredSeq: number;
  /** ... and these above it too (ascending). */
  deliveredAbove: number[];
  /** The events waiting for a retry. */
  retrying: RetryingEvent[];
  /** The most failures in a row of any event waiting for a retry. */
  failures: number;
  /** The whole endpoint waits until then (a Retry-After; with maxInFlight 1, any retry's wait); null: it does not. */
  nextAttemptAt: Date | null;
  lastFailureAt: Date | null;
  lastFailure: string | null;
  /** Set to disable the endpoint (a 410, the schedule used up): why. */
  disable?: string;
}

/** How one attempt ended, as the deliverer saw it. */
export type AttemptOutcome =
  | { status: number; retryAfterMs?: number | undefined }
  | { error: string };

/** What follows an attempt: the next event, a retry after a wait, or the endpoint disabled. */
export type NextStep =
  | { kind: 'delivered' }
  | { kind: 'retry'; failures: number; at: Date; why: string }
  | { kind: 'disable'; failures: number; why: string };

/** Disabled by the receiver: it answered 410 Gone. */
export const DISABLED_GONE = 'the receiver answered 410 Gone';
/** Disabled when the retry schedule was used up. */
export const DISABLED_EXHAUSTED = 'every retry of the schedule failed';
/** Disabled by `webhooks disable`. */
export const DISABLED_BY_OPERATOR = 'disabled by an operator';

/** A Retry-After is honoured up to this (a day): a receiver cannot park an endpoint for longer. */
export const MAX_RETRY_AFTER_MS = 24 * 3600 * 1000;

/** After a rotation, the secret it replaced keeps signing beside the new one this long (a day). */
export const PREVIOUS_SECRET_MS = 24 * 3600 * 1000;

/** A 2xx: the event was delivered. */
export function isDelivered(outcome: AttemptOutcome): boolean {
  return 'status' in outcome && outcome.status >= 200 && outcome.status < 300;
}

/** Events an endpoint has yet to receive: the log's head past the seq it was delivered up to. */
export function backlogOf(head: number, endpoint: Pick<WebhookEndpoint, 'deliveredSeq'>): number {
  return Math.max(0, head - endpoint.deliveredSeq);
}

/** What an outcome that is no delivery says in the log and `webhooks list`: the status, or the error. */
export function failureText(outcome: AttemptOutcome): string {
  return 'status' in outcome ? `HTTP ${outcome.status}` : outcome.error;
}

/**
 * The rule: a 2xx is delivered; a 410 disables the endpoint at once; anything else is failure
 * number failuresBefore + 1, retried after the schedule's wait for it, or after a 429's or 503's
 * Retry-After when that is longer (up to a day: a receiver may slow the retries, never hasten
 * them, so the schedule's days are never used up in seconds), and disables the endpoint once the
 * schedule is used up.
 */
export function nextStep(outcome: AttemptOutcome, failuresBefore: number, schedule: readonly number[], now: Date): NextStep {
  if (isDelivered(outcome)) return { kind: 'delivered' };
  const failures = failuresBefore + 1;
  const why = failureText(outcome);
  if ('status' in outcome && outcome.status === 410) return { kind: 'disable', failures, why: DISABLED_GONE };
  if (failures > schedule.length) return { kind: 'disable', failures, why: DISABLED_EXHAUSTED };
  let waitMs = schedule[failures - 1]!;
  if ('status' in outcome && (outcome.status === 429 || outcome.status === 503) && outcome.retryAfterMs !== undefined) {
    waitMs = Math.max(waitMs, Math.min(outcome.retryAfterMs, MAX_RETRY_AFTER_MS));
  }
  return { kind: 'retry', failures, at: new Date(now.getTime() + waitMs), why };
}
