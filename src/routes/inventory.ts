import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { ListCache } from '../cache/list-cache.js';
import { answerGetInventoryItem, getInventoryItem } from '../operations/get-inventory-item.js';
import { answerListInventory, listInventory } from '../operations/list-inventory.js';
import { answerUpdateInventory, updateInventory, type UpdateOptions } from '../operations/update-inventory.js';
import { sendAnswer } from '../http/fastify-pipeline.js';
import { parsePetIdParam, principalOf, routeOptions } from './route-options.js';

/**
 * The inventory operations on Fastify. The hot ones are usually answered before Fastify by the
 * fast lane (src/http/fast-lane.ts); both lanes call the same operations (src/operations/).
 */
export function inventoryRoutes(options: UpdateOptions & { listCache: ListCache }) {
  const { listCache, ...updateOptions } = options;
  return async (app: FastifyInstance): Promise<void> => {
    const api = app.withTypeProvider<TypeBoxTypeProvider>();
    app.decorateRequest('petId', 0n);

    api.route({
      ...routeOptions(listInventory),
      handler: async (request, reply) => sendAnswer(reply, await answerListInventory(listCache, request)),
    });

    api.route({
      ...routeOptions(getInventoryItem),
      onRequest: parsePetIdParam,
      handler: async (request, reply) => sendAnswer(reply, await answerGetInventoryItem(app.store.entries, { petId: request.petId, headers: request.headers })),
    });

    api.route({
      ...routeOptions(updateInventory),
      onRequest: parsePetIdParam,
      handler: async (request, reply) => {
        const update = { petId: request.petId, body: request.body, headers: request.headers, principal: principalOf(request), requestId: request.id };
        return sendAnswer(reply, await answerUpdateInventory(app.store.changes, update, updateOptions));
      },
    });
  };
}
