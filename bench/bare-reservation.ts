/**
 * What the bare durable servers (bare-durable.ts) know of a reservation: the body of POST
 * /v1/reservations they take (one item, as the bench's load sends it), and the texts a creation
 * writes and answers, each in the service's form, so that both backends' bare writers
 * (bare-sqlite-writes.ts, bare-durable-pg.ts) write the bytes the service's store writes: the
 * reservation's row and its item's, the entry's hold, and the event reservation.created with its
 * payload. No framework, no validation library: the few checks a hold needs, written out.
 */
import { randomBytes } from 'node:crypto';
import { RESERVATION_TTL_MAX, RESERVATION_TTL_MIN } from '../src/schemas/values.js';

/** A creation of a reservation, parsed: its id, made on arrival as the service's operation makes it, and what it holds of its pet for how long. */
export interface BareHold {
  id: string;
  quantity: number;
  ttlSeconds: number;
}

/** The service's default hold (RESERVATION_TTL_SECONDS unset), for a body without ttlSeconds. */
const DEFAULT_TTL_SECONDS = 900;

/**
 * The id the reservation row names its key by. The bare server has one key and no keys table, so
 * no id to read: this one has the length of the service's (key_ and 20 hex digits).
 */
export const BARE_KEY_ID = `key_${'0'.repeat(20)}`;

/**
 * A new reservation's id in the service's form (operations/reservation-parts.ts newReservationId):
 * res_, the millisecond in 12 hex digits, 12 random ones. Not 24 random digits: ids made in time
 * order land together at the end of the id's unique index, as the service's do, so the bare
 * server's index writes the pages the service's writes, no more.
 */
export function newBareReservationId(now = Date.now()): string {
  return `res_${now.toString(16).padStart(12, '0')}${randomBytes(6).toString('hex')}`;
}

/**
 * The body of POST /v1/reservations as one hold: `{"items":[{"petId","quantity"}]}`, with an
 * optional ttlSeconds; or the code of its refusal (anything else, more items included: the load
 * holds one pet at a time).
 */
export function readBareHold(body: unknown): { petId: number; hold: BareHold } | string {
  const { items, ttlSeconds = DEFAULT_TTL_SECONDS } = (body ?? {}) as { items?: unknown; ttlSeconds?: unknown };
  if (!Array.isArray(items) || items.length !== 1) return 'invalid_body';
  const { petId, quantity } = (items[0] ?? {}) as { petId?: unknown; quantity?: unknown };
  if (!Number.isSafeInteger(petId)) return 'invalid_pet_id';
  if (!Number.isInteger(quantity) || (quantity as number) < 1) return 'invalid_quantity';
  if (!Number.isInteger(ttlSeconds) || (ttlSeconds as number) < RESERVATION_TTL_MIN || (ttlSeconds as number) > RESERVATION_TTL_MAX) return 'invalid_parameter';
  return { petId: petId as number, hold: { id: newBareReservationId(), quantity: quantity as number, ttlSeconds: ttlSeconds as number } };
}

/** Where the service answers a new reservation is (its Location). */
export function reservationLocation(hold: BareHold): string {
  return `/v1/reservations/${hold.id}`;
}

/** The answer to a creation, the service's JSON (operations/reservation-parts.ts reservationJson) of a reservation of one item made at `createdAt` (Unix ms). */
export function reservationAnswer(petId: number, hold: BareHold, createdAt: number, expiresAt: number): string {
  return (
    `{"id":"${hold.id}","status":"active","items":[{"petId":${petId},"quantity":${hold.quantity}}],"reference":null,` +
    `"createdAt":"${new Date(createdAt).toISOString()}","expiresAt":"${new Date(expiresAt).toISOString()}"}`
  );
}

/** The event's payload column, as the service's store writes it (domain reservationPayload): the reservation's id, its items, reference and expiry. */
export function reservationPayload(petId: number, hold: BareHold, expiresAt: number): string {
  return `{"reservationId":"${hold.id}","items":[["${petId}",${hold.quantity}]],"reference":null,"expiresAt":${expiresAt}}`;
}
