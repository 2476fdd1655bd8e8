import { Type, type Static } from 'typebox';
import { tryParsePetId } from '../domain/pet-id.js';
import { parseReservationCursor, reservationPageOf } from '../domain/reservation.js';
import { petIdDescription } from '../schemas/inventory.js';
import { RESERVATION_STATUSES } from '../schemas/values.js';
import { ReservationPage } from '../schemas/reservation.js';
import { jsonAnswer } from './answer.js';
import { operation } from './handler.js';
import { RESERVATION_COMPONENTS, RESERVATIONS_TAG, reservationJson } from './reservation-parts.js';
import { invalidQueryParameter } from './validation.js';

export const RESERVATIONS_LIMIT_MAX = 500;
export const RESERVATIONS_LIMIT_DEFAULT = 100;

const ReservationQuery = Type.Object(
  {
    status: Type.Optional(Type.Unsafe<(typeof RESERVATION_STATUSES)[number]>({ type: 'string', enum: [...RESERVATION_STATUSES], description: 'Only reservations in this status, as they stand now' })),
    petId: Type.Optional(Type.String({ pattern: '^-?(0|[1-9][0-9]*)$', description: petIdDescription('Only reservations holding (or that held) this pet, its digits') })),
    // A decimal string, not an integer schema: conversion would quietly truncate 2.5 to 2.
    limit: Type.Optional(
      Type.String({ pattern: '^(500|[1-4][0-9]{2}|[1-9][0-9]?)$', description: `Reservations per page, 1 to ${RESERVATIONS_LIMIT_MAX} (default ${RESERVATIONS_LIMIT_DEFAULT})` }),
    ),
    cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 40, description: 'nextCursor of the previous page' })),
  },
  { additionalProperties: false },
);

/** What each query parameter accepts, in the words its refusal says. */
const ACCEPTS = {
  status: `one of ${RESERVATION_STATUSES.join(', ')}`,
  petId: 'a decimal integer from -9223372036854775808 to 9223372036854775807',
  limit: `an integer from 1 to ${RESERVATIONS_LIMIT_MAX}`,
  cursor: 'the nextCursor of the previous page, unchanged',
} as const satisfies Record<keyof Static<typeof ReservationQuery>, string>;

export const listReservations = operation({
  operationId: 'listReservations',
  method: 'GET',
  path: '/v1/reservations',
  summary: 'Reservations, newest first',
  description: 'Reservations newest first, by status as they stand now (an active one past its expiresAt is expired) and by pet. Pages with limit and cursor, as the history does.',
  tags: [RESERVATIONS_TAG],
  scope: 'reservations:write',
  querystring: ReservationQuery,
  queryAccepts: ACCEPTS,
  responses: { 200: { description: 'One page of reservations, newest first', schema: ReservationPage } },
  extensions: { 'x-extension': true },
  components: { ...RESERVATION_COMPONENTS, ReservationPage },
}, ({ store }) => async (request) => {
  const { query } = request;
  const limit = query.limit === undefined ? RESERVATIONS_LIMIT_DEFAULT : Number(query.limit);
  const petId = query.petId === undefined ? undefined : tryParsePetId(query.petId);
  if (query.petId !== undefined && petId === undefined) throw invalidQueryParameter('petId', ACCEPTS.petId);
  const before = query.cursor === undefined ? undefined : parseReservationCursor(query.cursor);
  if (query.cursor !== undefined && before === undefined) throw invalidQueryParameter('cursor', ACCEPTS.cursor);
  // One reservation more than asked tells whether another page follows.
  const rows = await store.reservations.list({ status: query.status, petId, limit: limit + 1, before });
  const { reservations, nextCursor } = reservationPageOf(rows, limit);
  return jsonAnswer(200, `{"items":[${reservations.map(reservationJson).join(',')}],"nextCursor":${JSON.stringify(nextCursor)}}`);
});
