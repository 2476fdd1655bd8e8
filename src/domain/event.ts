// From values.ts, not the event's schema: the SQLite writer thread imports this file, and should not load TypeBox.
import { EVENT_TYPES } from '../schemas/values.js';
import type { ChangeReason, PetStatus } from '../schemas/inventory.js';

// Declared with the wire schema (a layer below), kept importable from here.
export { EVENT_TYPES };
export type EventType = (typeof EVENT_TYPES)[number];

/** Who made the change: a request to the API (the dashboard's too), or the operator's CLI (add, adjust, import, remove, first run). */
export type EventSource = 'api' | 'cli';

/**
 * One committed change of an entry's stored quantity or status, as the store keeps it: appended
 * in the transaction of the change, so none exists for a change that rolled back, and none is
 * missing for one that committed. `seq` increases strictly in commit order and is never reused:
 * a reader that has seen seq n has seen every event below it that will ever exist.
 */
export interface InventoryEvent {
  seq: number;
  type: EventType;
  occurredAt: Date;
  petId: bigint;
  /** The entry's status after the change (a deleted entry: the status it had). */
  status: PetStatus;
  /** null when the entry appeared. */
  previousQuantity: number | null;
  /** null when the entry was retired. */
  quantity: number | null;
  /** The entry's version after the change: the number in its ETag. */
  version: number;
  reason: ChangeReason | null;
  source: EventSource;
  /** The API key that made the change; null for the CLI. */
  keyId: string | null;
  /** The X-Request-Id of the request that made it; null for the CLI. */
  requestId: string | null;
}

/** An event's public id. */
export function eventId(seq: number): string {
  return `evt_${seq}`;
}

/** A JSON string, or null. */
function jsonOrNull(value: string | null): string {
  return value === null ? 'null' : JSON.stringify(value);
}

/**
 * An event as the feed, the stream and webhooks send it: petId as its exact digits (decisions
 * 3.2), fields in the order of the schema (src/schemas/event.ts).
 */
export function eventJson(e: InventoryEvent): string {
  return (
    `{"id":"${eventId(e.seq)}","seq":${e.seq},"type":"${e.type}","occurredAt":"${e.occurredAt.toISOString()}",` +
    `"data":{"petId":${e.petId},"status":"${e.status}","previousQuantity":${e.previousQuantity},"quantity":${e.quantity},` +
    `"version":${e.version},"reason":${jsonOrNull(e.reason)},"source":"${e.source}","keyId":${jsonOrNull(e.keyId)},` +
    `"requestId":${jsonOrNull(e.requestId)}}}`
  );
}

/** An event before the store gives it its seq, in the transaction of its change (made by domain eventOf). */
export type NewEvent = Omit<InventoryEvent, 'seq'>;
