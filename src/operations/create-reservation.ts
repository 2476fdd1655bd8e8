import { Type } from 'typebox';
import { repeatedPet } from '../domain/inventory.js';
import { INT64_MAX, INT64_MIN } from '../domain/pet-id.js';
import type { ReservationItem as Item, ReservationRefusal } from '../domain/reservation.js';
import { ApiError } from '../errors.js';
import { stringifyJson } from '../json.js';
import { QUANTITY_MAX } from '../schemas/values.js';
import { ReservationErrorSchema, ReservationItemCheck, ReservationRequest } from '../schemas/reservation.js';
import type { Reservations } from '../store/store.js';
import { jsonAnswer, type Answer } from './answer.js';
import { JSON_MEDIA_TYPES } from './body.js';
import { REPLAYED_HEADER, changeOrigin, isKeyRefusal, keyRefusalError, type ChangeOptions, type ChangeRequest } from './change-request.js';
import { operation } from './handler.js';
import { IDEMPOTENCY_KEY_HEADER, KEY_REUSED, REPLAYED_RESPONSE_HEADER } from './item-parts.js';
import { NoQuery } from './operation.js';
import { newReservationId, RESERVATION_COMPONENTS, RESERVATIONS_TAG, reservationJson } from './reservation-parts.js';
import { compileSchemaValidator } from './schema-validator.js';
import { acceptedInput, BODY_SHAPE_ERROR_CODES, validationToApiError, type AcceptedInput } from './validation.js';

export const createReservation = operation({
  operationId: 'createReservation',
  method: 'POST',
  path: '/v1/reservations',
  summary: 'Hold stock for a checkout',
  description:
    'Holds every item or none, each from the pet\'s available stock (quantity - reserved), for ttlSeconds (1 to 86400, default ' +
    'RESERVATION_TTL_SECONDS, 900): until it is committed (sold), released, or expires. 201 with Location and the reservation. A pet ' +
    'without enough available stock is 409 insufficient_stock, an unknown pet 404 not_found, a bad item 400: each with index naming the ' +
    'item, and nothing held. Idempotency-Key works as on PATCH: a replay answers the same reservation, and nothing is held twice.',
  tags: [RESERVATIONS_TAG],
  scope: 'reservations:write',
  requestHeaders: IDEMPOTENCY_KEY_HEADER,
  querystring: NoQuery,
  // The operation checks each item itself: a refusal names the item's index, which a schema check of the whole body cannot.
  body: { schema: ReservationRequest, contentTypes: JSON_MEDIA_TYPES, description: 'What to hold, for how long', checkedByOperation: true },
  errorSchema: { name: 'ReservationError', schema: ReservationErrorSchema },
  responses: {
    201: {
      description: 'Every item held: the reservation',
      schema: RESERVATION_COMPONENTS.Reservation,
      headers: { Location: { description: '/v1/reservations/{id}', schema: Type.String(), required: true }, ...REPLAYED_RESPONSE_HEADER },
    },
    400: {
      description: 'The body or an item in it is invalid (index names the item), a pet appears twice, or items is empty or too long; nothing held',
      errorCodes: [...BODY_SHAPE_ERROR_CODES, 'invalid_pet_id', 'invalid_quantity', 'invalid_parameter'],
    },
    404: { description: 'An item names a pet without an inventory entry (index names it); nothing held', errorCodes: ['not_found'] },
    409: { description: 'An item asks for more than the pet has available (index names it, the message what is available); nothing held', errorCodes: ['insufficient_stock'] },
    422: KEY_REUSED,
  },
  extensions: { 'x-extension': true },
  components: { ReservationRequest, ...RESERVATION_COMPONENTS },
}, ({ store, changeOptions, reservationLimits }) => (request) => answerCreateReservation(store.reservations, request, { ...changeOptions, ...reservationLimits }));

/** The settings a creation follows. */
export interface CreateOptions extends Pick<ChangeOptions, 'idempotencyRecordsPerKey'> {
  /** RESERVATION_MAX_ITEMS */
  maxItems: number;
  /** RESERVATION_TTL_SECONDS */
  ttlSeconds: number;
}

const checkEnvelope = compileSchemaValidator({ schema: Type.Object({ ...ReservationRequest.properties, items: Type.Unknown() }, { additionalProperties: false }), httpPart: 'body' });
const checkItem = compileSchemaValidator({ schema: ReservationItemCheck, httpPart: 'body' });
const ACCEPTS = acceptedInput(createReservation);
const ITEM_ACCEPTS: AcceptedInput = {
  query: {},
  bodyFields: ['petId', 'quantity'],
  requiredBodyFields: ['petId', 'quantity'],
  // A hold of nothing is no hold: an item's quantity starts at 1, where a count's starts at 0.
  fieldMessages: { quantity: `quantity must be an integer from 1 to ${QUANTITY_MAX}` },
};

/** POST /v1/reservations: the body checked item by item, then the store, under the request's Idempotency-Key. */
export async function answerCreateReservation(reservations: Pick<Reservations, 'create'>, request: ChangeRequest & { body: unknown }, options: CreateOptions): Promise<Answer> {
  const { items, ttlSeconds, reference } = readReservation(request.body, options);
  const origin = changeOrigin(request, { operationId: createReservation.operationId, target: '', body: request.body }, options.idempotencyRecordsPerKey);
  const id = newReservationId();
  const result = await reservations.create({ id, items, ttlSeconds, reference, origin });
  if (isKeyRefusal(result)) throw keyRefusalError(result, options.idempotencyRecordsPerKey);
  const replayed = result.replayed ? REPLAYED_HEADER : {};
  if (result.kind !== 'created') throw refusal(result, items, replayed);
  const made = result.reservation;
  return jsonAnswer(201, reservationJson(made), { ...replayed, location: `/v1/reservations/${made.id}` });
}

/** A store's refusal of one item as the ApiError it is answered with, naming the item by index. */
function refusal(r: ReservationRefusal, items: readonly Item[], headers: Record<string, string>): ApiError {
  if (r.kind === 'not_found') return new ApiError('not_found', `items[${r.index}]: Pet ${r.petId} has no inventory entry. Nothing is held.`, headers, r.index);
  const wanted = items[r.index]!.quantity;
  return new ApiError(
    'insufficient_stock',
    `items[${r.index}]: Pet ${r.petId} has ${r.available} available (${r.quantity} on hand, ${r.reserved} held by reservations); ${wanted} asked for. Nothing is held.`,
    headers,
    r.index,
  );
}

/** The body as the store takes it, or the refusal of the body or of its first bad item, by index. */
export function readReservation(body: unknown, options: Pick<CreateOptions, 'maxItems' | 'ttlSeconds'>): { items: Item[]; ttlSeconds: number; reference: string | null } {
  const envelope = checkEnvelope(body);
  if (envelope.error) throw validationToApiError(envelope.error, 'body', body, ACCEPTS);
  const fields = body as { items: unknown; ttlSeconds?: number; reference?: string };
  const given = fields.items;
  if (!Array.isArray(given) || given.length === 0 || given.length > options.maxItems) {
    const got = Array.isArray(given) ? `${given.length} items` : 'no array';
    throw new ApiError('invalid_body', `items must be an array of 1 to ${options.maxItems} items; got ${got}.`);
  }
  const items = given.map((item, index) => {
    try {
      return readItem(item);
    } catch (err) {
      throw err instanceof ApiError ? new ApiError(err.code, `items[${index}]: ${err.message}`, {}, index) : err;
    }
  });
  const repeat = repeatedPet(items);
  if (repeat >= 0) {
    const petId = items[repeat]!.petId;
    const first = items.findIndex((i) => i.petId === petId);
    throw new ApiError('invalid_body', `items[${repeat}]: Pet ${petId} is already held by items[${first}]: a reservation names each pet once.`, {}, repeat);
  }
  return { items, ttlSeconds: fields.ttlSeconds ?? options.ttlSeconds, reference: fields.reference ?? null };
}

function readItem(item: unknown): Item {
  if (typeof item !== 'object' || item === null || Array.isArray(item)) {
    throw new ApiError('invalid_body', `An item must be a JSON object with petId and quantity, not ${stringifyJson(item).slice(0, 40)}.`);
  }
  const checked = checkItem(item);
  if (checked.error) throw validationToApiError(checked.error, 'body', item, ITEM_ACCEPTS);
  const { petId, quantity } = item as { petId: unknown; quantity: number };
  const exact = typeof petId === 'number' && Number.isSafeInteger(petId) ? BigInt(petId) : typeof petId === 'bigint' && petId >= INT64_MIN && petId <= INT64_MAX ? petId : undefined;
  if (exact === undefined) throw new ApiError('invalid_pet_id', `petId must be an integer from ${INT64_MIN} to ${INT64_MAX}; got ${stringifyJson(petId).slice(0, 40)}.`);
  return { petId: exact, quantity };
}
