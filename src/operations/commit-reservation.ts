import { answerEndReservation } from './end-reservation.js';
import { operation } from './handler.js';
import { NoQuery } from './operation.js';
import { RESERVATION_COMPONENTS, RESERVATION_ID_PARAM, RESERVATIONS_TAG } from './reservation-parts.js';

export const commitReservation = operation({
  operationId: 'commitReservation',
  method: 'POST',
  path: '/v1/reservations/{id}/commit',
  summary: 'Sell what a reservation holds',
  description:
    'The sale: each item\'s quantity goes down by what it held (never below 0), with one history row (reason sold) and one ' +
    'inventory.updated event per pet, then reservation.committed, all in one transaction. Committing again answers the same 200; a ' +
    'released or expired reservation is 409 reservation_not_active, naming its status.',
  tags: [RESERVATIONS_TAG],
  scope: 'reservations:write',
  pathParams: RESERVATION_ID_PARAM,
  querystring: NoQuery,
  responses: {
    200: { description: 'Committed (now or before): the reservation', schema: RESERVATION_COMPONENTS.Reservation },
    404: { description: 'No reservation has this id', errorCodes: ['not_found'] },
    409: { description: 'The reservation was released or expired; nothing changed', errorCodes: ['reservation_not_active'] },
  },
  extensions: { 'x-extension': true },
  components: RESERVATION_COMPONENTS,
}, ({ store }) => (request) => answerEndReservation(store.reservations, request, 'commit'));
