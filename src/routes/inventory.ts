import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { parsePetId } from '../domain/pet-id.js';
import { ApiError } from '../errors.js';
import { JSON_MEDIA_TYPES } from '../http/json-body.js';
import { InventoryItem, InventoryList, InventoryUpdate, PetId } from '../schemas/inventory.js';
import { NoQuery, routeOptions, type OperationSpec } from './operation.js';

export const listInventory = {
  operationId: 'listInventory',
  method: 'GET',
  path: '/v1/inventory',
  summary: 'List stock levels',
  description: 'Returns current stock levels for all pets in the store, ordered by petId ascending.',
  tags: ['inventory'],
  scope: 'inventory:read',
  querystring: NoQuery,
  responses: { 200: { description: 'The stock of every pet', schema: InventoryList } },
  contractStatuses: [200, 401],
} as const satisfies OperationSpec;

export const updateInventory = {
  operationId: 'updateInventory',
  method: 'PATCH',
  path: '/v1/inventory/{petId}',
  summary: 'Update stock level',
  description:
    'Sets the stock quantity for one pet (new arrivals, returns, manual adjustments). The entry must exist; its status never changes. ' +
    'Experimental: the request shape may change before it becomes stable.',
  tags: ['inventory'],
  scope: 'inventory:write',
  pathParams: { petId: Type.Unsafe({ ...PetId, description: 'The ID of the pet whose stock is updated' }) },
  querystring: NoQuery,
  body: { schema: InventoryUpdate, contentTypes: JSON_MEDIA_TYPES, description: 'The new stock count' },
  responses: {
    200: { description: 'Update accepted: the updated entry', schema: InventoryItem },
    404: { description: 'The pet has no inventory entry', errorCodes: ['not_found'] },
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
async function parsePetIdParam(request: FastifyRequest): Promise<void> {
  request.petId = parsePetId((request.params as { petId: string }).petId);
}

export async function inventoryRoutes(app: FastifyInstance): Promise<void> {
  app.decorateRequest('petId', 0n);

  app.route({
    ...routeOptions(listInventory),
    handler: async () => app.store.listInventory(),
  });

  app.route({
    ...routeOptions(updateInventory, parsePetIdParam),
    handler: async (request) => {
      const { quantity } = request.body as InventoryUpdate;
      const item = await app.store.setQuantity(request.petId, quantity);
      if (!item) throw new ApiError('not_found', `Pet ${request.petId} has no inventory entry.`);
      return item;
    },
  });
}
