import { randomBytes } from 'node:crypto';
import { Type } from 'typebox';
import { reservationItemsJson } from '../domain/event.js';
import type { EndOutcome, Reservation } from '../domain/reservation.js';
import { ApiError } from '../errors.js';
import { Reservation as ReservationSchema, ReservationItem, ReservationStatus } from '../schemas/reservation.js';
import type { Tag } from './operation.js';

/** The parts the reservation operations declare alike (decisions 12). */

export const RESERVATIONS_TAG = { name: 'reservations', description: 'Stock held for a checkout, then sold, given up, or expired' } as const satisfies Tag;

/** A reservation's id as the paths take it; any other text names no reservation (404). */
export const RESERVATION_ID = /^res_[0-9a-f]{24}$/;

/**
 * A new reservation's id (decisions 12.5): res_, then the millisecond it was made in 12 hex
 * digits, then 12 random ones. Why not 24 random digits: each new id then landed on a page of its
 * own all over the id index, and a group of creations wrote a third more pages to disk for it;
 * ids made in time order land together at the index's end. The time says nothing a reservation's
 * createdAt does not, and nothing of how many reservations a store makes.
 */
export function newReservationId(now = Date.now()): string {
  return `res_${now.toString(16).padStart(12, '0')}${randomBytes(6).toString('hex')}`;
}

export const RESERVATION_ID_PARAM = { id: Type.String({ description: 'The reservation\'s id: res_ and 24 hex digits' }) };

/** The components every operation answering a reservation brings. */
export const RESERVATION_COMPONENTS = { Reservation: ReservationSchema, ReservationItem, ReservationStatus };

/** A reservation's JSON: petIds as their exact digits, times in RFC 3339 UTC. */
export function reservationJson(r: Reservation): string {
  return (
    `{"id":"${r.id}","status":"${r.status}","items":${reservationItemsJson(r.items)},"reference":${r.reference === null ? 'null' : JSON.stringify(r.reference)},` +
    `"createdAt":"${r.createdAt.toISOString()}","expiresAt":"${r.expiresAt.toISOString()}"}`
  );
}

/** The id of the path, or the 404 of one no reservation can have. */
export function reservationIdOf(params: Readonly<Record<string, string>> | undefined): string {
  const id = params?.['id'] ?? '';
  if (!RESERVATION_ID.test(id)) throw reservationNotFound(id);
  return id;
}

export function reservationNotFound(id: string): ApiError {
  return new ApiError('not_found', `No reservation has the id ${JSON.stringify(id.slice(0, 60))}.`);
}

/** The answer to an end that did not happen now: the same 200 again, 409 naming the status it is in, or 404. */
export function endRefusal(outcome: Exclude<EndOutcome, { kind: 'ended' | 'already' }>, id: string, verb: string): ApiError {
  if (outcome.kind === 'not_found') return reservationNotFound(id);
  return new ApiError('reservation_not_active', `Reservation ${id} is ${outcome.reservation.status}, so it cannot be ${verb}; nothing changed.`);
}
