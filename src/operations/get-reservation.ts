import { jsonAnswer } from './answer.js';
import { operation } from './handler.js';
import { NoQuery } from './operation.js';
import { RESERVATION_COMPONENTS, RESERVATION_ID_PARAM, RESERVATIONS_TAG, reservationIdOf, reservationJson, reservationNotFound } from './reservation-parts.js';

export const getReservation = operation({
  operationId: 'getReservation',
  method: 'GET',
  path: '/v1/reservations/{id}',
  summary: 'One reservation',
  description: 'The reservation as it stands: an active one past its expiresAt is expired, holding nothing, whether or not the service has marked it yet.',
  tags: [RESERVATIONS_TAG],
  scope: 'reservations:write',
  pathParams: RESERVATION_ID_PARAM,
  querystring: NoQuery,
  responses: {
    200: { description: 'The reservation', schema: RESERVATION_COMPONENTS.Reservation },
    404: { description: 'No reservation has this id', errorCodes: ['not_found'] },
  },
  extensions: { 'x-extension': true },
  components: RESERVATION_COMPONENTS,
}, ({ store }) => async (request) => {
  const id = reservationIdOf(request.params);
  const found = await store.reservations.get(id);
  if (!found) throw reservationNotFound(id);
  return jsonAnswer(200, reservationJson(found));
});
