import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { parsePetId } from '../domain/pet-id.js';
import type { ListCache } from '../cache/list-cache.js';
import { etagOf } from '../domain/inventory.js';
import { ifNoneMatchHits } from '../http/conditional.js';
import { headerValue } from '../http/header-value.js';
import { JSON_MEDIA_TYPES } from '../http/json-body.js';
import { JSON_CONTENT_TYPE } from '../http/response-headers.js';
import { listInventoryAnswer } from '../operations/list-inventory.js';
import { notFound } from '../operations/not-found.js';
import { REPLAYED_HEADER, UPDATE_OPERATION_ID, updateInventoryEntry } from '../operations/update-inventory.js';
import { InventoryItem, InventoryList, InventoryUpdate, PetId } from '../schemas/inventory.js';
import { NoQuery, routeOptions, type OperationSpec, type ResponseSpec } from './operation.js';

const PET_ID_PARAM = { petId: Type.Unsafe({ ...PetId, description: 'The ID of the pet' }) };

const ETAG_HEADER = {
  ETag: { description: 'Strong entity tag of the entry\'s version; send it in If-Match to update only that version', schema: Type.String(), required: true },
} satisfies ResponseSpec['headers'];

const NOT_FOUND = { description: 'The pet has no inventory entry', errorCodes: ['not_found'] } as const satisfies ResponseSpec;

export const listInventory = {
  operationId: 'listInventory',
  method: 'GET',
  path: '/v1/inventory',
  summary: 'List stock levels',
  description: 'Returns current stock levels for all pets in the store, ordered by petId ascending.',
  tags: ['inventory'],
  scope: 'inventory:read',
  requestHeaders: {
    'If-None-Match': { description: 'An ETag of an earlier answer: 304 while nothing in the store has changed', schema: Type.String() },
  },
  querystring: NoQuery,
  responses: {
    200: {
      description: 'The stock of every pet; br or gzip when Accept-Encoding allows and the list is over 1 KiB',
      schema: InventoryList,
      headers: { ETag: { description: 'Strong entity tag of the list at this store version (one per content coding)', schema: Type.String(), required: true } },
    },
    304: { description: 'Nothing changed since the If-None-Match ETag' },
  },
  contractStatuses: [200, 401],
} as const satisfies OperationSpec;

export const getInventoryItem = {
  operationId: 'getInventoryItem',
  method: 'GET',
  path: '/v1/inventory/{petId}',
  summary: 'Get one stock level',
  description: 'Returns the entry of one pet with its ETag, the start of a safe read-modify-write (If-Match on the PATCH).',
  tags: ['inventory'],
  scope: 'inventory:read',
  pathParams: PET_ID_PARAM,
  requestHeaders: {
    'If-None-Match': { description: 'An ETag from an earlier answer: 304 while the entry still has that version', schema: Type.String() },
  },
  querystring: NoQuery,
  responses: {
    200: { description: 'The entry', schema: InventoryItem, headers: ETAG_HEADER },
    304: { description: 'The entry still has the version of the If-None-Match ETag', headers: ETAG_HEADER },
    404: NOT_FOUND,
  },
  extensions: { 'x-extension': true },
} as const satisfies OperationSpec;

export const updateInventory = {
  operationId: UPDATE_OPERATION_ID,
  method: 'PATCH',
  path: '/v1/inventory/{petId}',
  summary: 'Update stock level',
  description:
    'Sets the stock quantity for one pet (new arrivals, returns, manual adjustments). The entry must exist; its status never changes. ' +
    'Experimental: the request shape may change before it becomes stable.\n\n' +
    'Extensions: If-Match makes the update conditional on the entry\'s version (412 when it changed); Idempotency-Key makes a retry ' +
    'safe (the first answer is replayed for 24 hours, with Idempotent-Replayed: true); the optional body field reason is kept in the ' +
    'change history.',
  tags: ['inventory'],
  scope: 'inventory:write',
  pathParams: { petId: Type.Unsafe({ ...PetId, description: 'The ID of the pet whose stock is updated' }) },
  requestHeaders: {
    'If-Match': {
      description: 'Update only if the entry\'s ETag is one of these ("*": any existing entry). Required when the service runs with REQUIRE_IF_MATCH=true.',
      schema: Type.String(),
    },
    'Idempotency-Key': {
      description: 'A unique key per intended change (e.g. a UUID), 1 to 255 printable ASCII characters; a retry with the same key and body gets the first answer again',
      schema: Type.String({ minLength: 1, maxLength: 255 }),
    },
  },
  querystring: NoQuery,
  body: { schema: InventoryUpdate, contentTypes: JSON_MEDIA_TYPES, description: 'The new stock count' },
  responses: {
    200: {
      description: 'Update accepted: the updated entry',
      schema: InventoryItem,
      headers: {
        ...ETAG_HEADER,
        'Idempotent-Replayed': { description: '"true" when this is the stored answer to an earlier request with the same Idempotency-Key', schema: Type.String() },
      },
    },
    404: NOT_FOUND,
    412: {
      description: 'If-Match named another version of the entry; nothing changed. ETag holds the current version.',
      errorCodes: ['precondition_failed'],
      headers: ETAG_HEADER,
    },
    422: { description: 'The Idempotency-Key was used with a different request', errorCodes: ['idempotency_key_reused'] },
    428: { description: 'If-Match is required (REQUIRE_IF_MATCH=true) and was not sent', errorCodes: ['precondition_required'] },
  },
  contractStatuses: [200, 400, 401, 404],
  extensions: { 'x-experimental': true },
} as const satisfies OperationSpec;

declare module 'fastify' {
  interface FastifyRequest {
    /** The parsed petId path parameter of item routes. */
    petId: bigint;
  }
}

/** Route-level onRequest hook: a bad petId is 400 before the body is read (PD 3.1). */
export async function parsePetIdParam(request: FastifyRequest): Promise<void> {
  request.petId = parsePetId((request.params as { petId: string }).petId);
}

/**
 * The inventory operations on Fastify. The hot ones in their plain form are usually answered
 * before Fastify by src/http/fast-lane.ts; both lanes call the same src/operations/ code.
 */
export function inventoryRoutes(options: { requireIfMatch: boolean; listCache: ListCache }) {
  const { listCache, requireIfMatch } = options;
  return async (app: FastifyInstance): Promise<void> => {
    app.decorateRequest('petId', 0n);

    app.route({
      ...routeOptions(listInventory),
      handler: async (request, reply) => {
        const answer = listInventoryAnswer(await listCache.current(), headerValue(request, 'accept-encoding'), headerValue(request, 'if-none-match'));
        reply.header('vary', 'Accept-Encoding').header('etag', answer.etag);
        if (answer.status === 304) return reply.code(304).send();
        reply.type(JSON_CONTENT_TYPE);
        if (answer.encoding) reply.header('content-encoding', answer.encoding);
        return reply.send(await answer.body);
      },
    });

    app.route({
      ...routeOptions(getInventoryItem, parsePetIdParam),
      handler: async (request, reply) => {
        const entry = await app.store.getEntry(request.petId);
        if (!entry) throw notFound(request.petId);
        const etag = etagOf(entry.version);
        reply.header('etag', etag);
        if (ifNoneMatchHits(headerValue(request, 'if-none-match'), [etag])) return reply.code(304).send();
        return entry.item;
      },
    });

    app.route({
      ...routeOptions(updateInventory, parsePetIdParam),
      handler: async (request, reply) => {
        const answer = await updateInventoryEntry(
          app.store,
          {
            petId: request.petId,
            body: request.body as InventoryUpdate,
            ifMatch: headerValue(request, 'if-match'),
            idempotencyKey: headerValue(request, 'idempotency-key'),
            principal: request.principal!,
            requestId: request.id,
          },
          { requireIfMatch },
        );
        if (answer.replayed) reply.headers(REPLAYED_HEADER);
        reply.header('etag', answer.etag);
        return answer.item;
      },
    });
  };
}
