import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { ListCache } from '../cache/list-cache.js';
import type { RateLimiter } from '../limits/rate-limiter.js';
import { adjustInventory, answerAdjustInventory } from '../operations/adjust-inventory.js';
import { answerInventoryBatch, applyInventoryBatch, batchBodyLimit } from '../operations/batch-inventory.js';
import type { ChangeOptions } from '../operations/change-request.js';
import { answerGetInventoryItem, getInventoryItem } from '../operations/get-inventory-item.js';
import { answerListInventory, listInventory } from '../operations/list-inventory.js';
import { answerUpdateInventory, updateInventory } from '../operations/update-inventory.js';
import { takeMore } from '../pipeline/limit-rules.js';
import { sendAnswer } from '../http/fastify-pipeline.js';
import { parsePetIdParam, changeRequestOf, routeOptions } from './route-options.js';

/** What the inventory routes need beyond the store. */
export interface InventoryRouteOptions extends ChangeOptions {
  listCache: ListCache;
  /** BODY_LIMIT, which the batch's limit is never below. */
  bodyLimit: number;
  /** BATCH_MAX_CHANGES */
  batchMaxChanges: number;
  /** The per-key rate limit, which a batch takes one request from per change; absent when off. */
  rateLimiter?: RateLimiter | undefined;
}

/**
 * The inventory operations on Fastify. The hot ones are usually answered before Fastify by the
 * fast lane (src/http/fast-lane.ts); both lanes call the same operations (src/operations/).
 */
export function inventoryRoutes(options: InventoryRouteOptions) {
  const { listCache, rateLimiter, requireIfMatch, idempotencyRecordsPerKey } = options;
  const changeOptions = { requireIfMatch, idempotencyRecordsPerKey };
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
        const update = { ...changeRequestOf(request), petId: request.petId, body: request.body };
        return sendAnswer(reply, await answerUpdateInventory(app.store.changes, update, changeOptions));
      },
    });

    api.route({
      ...routeOptions(adjustInventory),
      onRequest: parsePetIdParam,
      handler: async (request, reply) => {
        const adjustment = { ...changeRequestOf(request), petId: request.petId, body: request.body };
        return sendAnswer(reply, await answerAdjustInventory(app.store.changes, adjustment, changeOptions));
      },
    });

    api.route({
      ...routeOptions(applyInventoryBatch),
      // Sized for the largest batch (decisions 5.12), never below BODY_LIMIT.
      bodyLimit: batchBodyLimit(options),
      handler: async (request, reply) => {
        const batch = { ...changeRequestOf(request), body: request.body };
        const ctx = request.ctx;
        const chargeRequests = rateLimiter && ctx ? (count: number) => takeMore(rateLimiter, ctx, count) : undefined;
        return sendAnswer(reply, await answerInventoryBatch(app.store.changes, batch, { ...changeOptions, maxChanges: options.batchMaxChanges, chargeRequests }));
      },
    });
  };
}
