import type { EventOrigin } from './write-kinds.js';
import type { InventoryEvent, NewEvent, ReservationEvent, ReservationEventType } from './event.js';
import { parseReservationPayload, reservationPayload, type Reservation } from './reservation.js';

/** The event type each status a reservation reaches appends (decisions 12.6). */
export const RESERVATION_EVENT_TYPES = {
  active: 'reservation.created',
  committed: 'reservation.committed',
  released: 'reservation.released',
  expired: 'reservation.expired',
} as const satisfies Record<Reservation['status'], ReservationEventType>;

/**
 * The event of a reservation reaching its status at `at`: the API's carries its key and request ids,
 * the CLI's neither; without an origin it is the store's own expiry (source expiry).
 */
export function reservationEvent(reservation: Reservation, at: Date, origin: EventOrigin | undefined): Omit<ReservationEvent, 'seq'> {
  const byApi = origin?.source === 'api';
  return {
    type: RESERVATION_EVENT_TYPES[reservation.status],
    occurredAt: at,
    reservationId: reservation.id,
    status: reservation.status,
    items: reservation.items,
    reference: reservation.reference,
    expiresAt: reservation.expiresAt,
    source: origin?.source ?? 'expiry',
    keyId: byApi ? origin.keyId : null,
    requestId: byApi ? origin.requestId : null,
  };
}

/** The columns every event row has, as a backend reads them, and the payload a reservation's carries. */
export interface EventRowFacts {
  seq: number;
  type: string;
  occurredAt: Date;
  petId: bigint | null;
  status: string;
  previousQuantity: number | null;
  quantity: number | null;
  version: number | null;
  reason: string | null;
  source: string;
  keyId: string | null;
  requestId: string | null;
  payload: string | null;
}

/** An event row as the event it is: one backend's row reader for both kinds. */
export function eventOfRow(r: EventRowFacts): InventoryEvent {
  if (r.payload !== null) {
    const p = parseReservationPayload(r.payload);
    return {
      seq: r.seq,
      type: r.type as ReservationEventType,
      occurredAt: r.occurredAt,
      reservationId: p.reservationId,
      status: r.status as Reservation['status'],
      items: p.items,
      reference: p.reference,
      expiresAt: p.expiresAt,
      source: r.source as ReservationEvent['source'],
      keyId: r.keyId,
      requestId: r.requestId,
    };
  }
  return {
    seq: r.seq,
    type: r.type as never,
    occurredAt: r.occurredAt,
    petId: r.petId!,
    status: r.status as never,
    previousQuantity: r.previousQuantity,
    quantity: r.quantity,
    version: r.version ?? 0,
    reason: r.reason as never,
    source: r.source as never,
    keyId: r.keyId,
    requestId: r.requestId,
  };
}

/** A new event's payload column: a reservation's, or none. */
export function payloadOf(e: NewEvent): string | null {
  return 'reservationId' in e ? reservationPayload({ id: e.reservationId, items: e.items, reference: e.reference, expiresAt: e.expiresAt }) : null;
}
