// From values.ts, not the event's schema: the SQLite writer thread imports this file, and should not load TypeBox.
import { EVENT_TYPES } from '../schemas/values.js';
import type { ChangeReason, PetStatus } from '../schemas/inventory.js';
import type { ReservationItem, ReservationStatus } from './reservation-item.js';

// Declared with the wire schema (a layer below), kept importable from here.
export { EVENT_TYPES };
export type EventType = (typeof EVENT_TYPES)[number];
/** What happened to a reservation (decisions 12.6). */
export type ReservationEventType = Extract<EventType, `reservation.${string}`>;
/** What happened to an entry. */
export type StockEventType = Exclude<EventType, ReservationEventType>;

/** Who made the change: a request to the API (the dashboard's too), or the operator's CLI (add, adjust, import, remove, first run). */
export type EventSource = 'api' | 'cli';

/**
 * One committed change of an entry's stored quantity or status, as the store keeps it: appended
 * in the transaction of the change, so none exists for a change that rolled back, and none is
 * missing for one that committed. `seq` increases strictly in commit order and is never reused:
 * a reader that has seen seq n has seen every event below it that will ever exist.
 */
export interface StockEvent {
  seq: number;
  type: StockEventType;
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

/**
 * One committed change of a reservation, in the same log as the entries' (decisions 12.6): it
 * names every pet it holds or gave up, so readers that keep each pet's order (webhooks) hold it
 * in the order of each of them.
 */
export interface ReservationEvent {
  seq: number;
  type: ReservationEventType;
  occurredAt: Date;
  reservationId: string;
  /** The reservation's status after the change. */
  status: ReservationStatus;
  items: ReservationItem[];
  reference: string | null;
  expiresAt: Date;
  /** Whose change: a request, the operator's command line, or the store's own expiry (which no request made). */
  source: EventSource | 'expiry';
  keyId: string | null;
  requestId: string | null;
}

/** Every event of the log. */
export type InventoryEvent = StockEvent | ReservationEvent;

/** Whether an event tells of a reservation rather than of one entry. */
export function isReservationEvent<E extends { type: EventType }>(e: E): e is Extract<E, { type: ReservationEventType }> {
  return e.type.startsWith('reservation.');
}

/** The pets an event names, whose order a reader that keeps each pet's order holds it in. */
export function eventPets(e: InventoryEvent): readonly bigint[] {
  return isReservationEvent(e) ? e.items.map((i) => i.petId) : [e.petId];
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
  if (isReservationEvent(e)) {
    return (
      `{"id":"${eventId(e.seq)}","seq":${e.seq},"type":"${e.type}","occurredAt":"${e.occurredAt.toISOString()}",` +
      `"data":{"reservationId":"${e.reservationId}","status":"${e.status}","items":${reservationItemsJson(e.items)},` +
      `"reference":${jsonOrNull(e.reference)},"expiresAt":"${e.expiresAt.toISOString()}","source":"${e.source}",` +
      `"keyId":${jsonOrNull(e.keyId)},"requestId":${jsonOrNull(e.requestId)}}}`
    );
  }
  return (
    `{"id":"${eventId(e.seq)}","seq":${e.seq},"type":"${e.type}","occurredAt":"${e.occurredAt.toISOString()}",` +
    `"data":{"petId":${e.petId},"status":"${e.status}","previousQuantity":${e.previousQuantity},"quantity":${e.quantity},` +
    `"version":${e.version},"reason":${jsonOrNull(e.reason)},"source":"${e.source}","keyId":${jsonOrNull(e.keyId)},` +
    `"requestId":${jsonOrNull(e.requestId)}}}`
  );
}

/** A reservation's items as JSON: petIds as their exact digits. */
export function reservationItemsJson(items: readonly ReservationItem[]): string {
  return `[${items.map((i) => `{"petId":${i.petId},"quantity":${i.quantity}}`).join(',')}]`;
}

/** An event before the store gives it its seq, in the transaction of its change (made by domain eventOf, or reservationEvent). */
export type NewEvent = Omit<StockEvent, 'seq'> | Omit<ReservationEvent, 'seq'>;
