import { eventId, eventJson, eventPets, type InventoryEvent } from '../domain/event.js';
import type { DeliveryAttempt, WEBHOOK_EVENT_TYPES } from '../domain/webhook.js';
import type { SentAttempt } from './sender.js';

/** One webhook message: the webhook-id (the same on every attempt) and the JSON body. */
export interface WebhookMessage {
  id: string;
  /** The seq it moves the endpoint to once delivered; 0 for a test, which moves nothing. */
  seq: number;
  body: string;
  /** The pets it tells of, whose order it keeps (decisions 10.4); undefined: it concerns every pet (a reset). */
  pets?: readonly bigint[];
  /** When the change it tells of committed (the delivery latency is measured from it); undefined for a test or a reset. */
  occurredAt?: Date;
}

/** An event of the log, as the feed and the stream have it. */
export function eventMessage(event: InventoryEvent): WebhookMessage {
  return { id: eventId(event.seq), seq: event.seq, body: eventJson(event), pets: eventPets(event), occurredAt: event.occurredAt };
}

/**
 * The events after the endpoint's place were pruned before it got them (it was off longer than
 * the retention): it is told to reload the list, and goes on after `head`. The id names the
 * endpoint's place and the head, so every retry of this reset carries the same one.
 */
export function resetMessage(endpointId: string, after: number, head: number, now: Date): WebhookMessage {
  const id = `evt_reset_${after}_${head}`;
  return { id, seq: head, body: ownEventBody(id, 'webhook.reset', now, { endpointId, head }) };
}

/** The event `webhooks test` sends: out of the order, moving nothing. */
export function testMessage(endpointId: string, id: string, now: Date): WebhookMessage {
  return { id, seq: 0, body: ownEventBody(id, 'webhook.test', now, { endpointId }) };
}

/** The body of an event that is not in the log, in the shape of the log's (its fields in the same order), numbers all safe. */
function ownEventBody(id: string, type: (typeof WEBHOOK_EVENT_TYPES)[number], now: Date, data: Record<string, string | number>): string {
  return JSON.stringify({ id, type, occurredAt: now.toISOString(), data });
}

/** One attempt to send `message` to endpoint `endpointId`, begun at `at`, as the delivery log keeps it. */
export function attemptRecord(endpointId: string, message: WebhookMessage, at: Date, sent: SentAttempt): DeliveryAttempt {
  const outcome = sent.outcome;
  return {
    endpointId,
    eventId: message.id,
    seq: message.seq,
    attemptedAt: at,
    status: 'status' in outcome ? outcome.status : null,
    error: 'error' in outcome ? outcome.error : null,
    durationMs: sent.durationMs,
    responseBody: sent.responseBody,
  };
}
