import { answerEndReservation } from './end-reservation.js';
import { operation } from './handler.js';
import { NoQuery } from './operation.js';
import { RESERVATION_COMPONENTS, RESERVATION_ID_PARAM, RESERVATIONS_TAG } from './reservation-parts.js';

export const releaseReservation = operation({
  operationId: 'releaseReservation',
  method: 'POST',
  path: '/v1/reservations/{id}/release',
  summary: 'Give up what a reservation holds',
  description:
    'Its pets are available again at once, with a reservation.released event. Releasing again answers the same 200; a committed or ' +
    'expired reservation is 409 reservation_not_active, naming its status.',
  tags: [RESERVATIONS_TAG],
  scope: 'reservations:write',
  pathParams: RESERVATION_ID_PARAM,
  querystring: NoQuery,
  responses: {
    200: { description: 'Released (now or before): the reservation', schema: RESERVATION_COMPONENTS.Reservation },
    404: { description: 'No reservation has this id', errorCodes: ['not_found'] },
    409: { description: 'The reservation was committed or expired; nothing changed', errorCodes: ['reservation_not_active'] },
  },
  extensions: { 'x-extension': true },
  components: RESERVATION_COMPONENTS,
}, ({ store }) => (request) => answerEndReservation(store.reservations, request, 'release'));
