import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { sendAnswer } from '../http/fastify-pipeline.js';
import { answerListHistory, listInventoryHistory } from '../operations/list-history.js';
import { parsePetIdParam, routeOptions } from './route-options.js';

export async function historyRoutes(app: FastifyInstance): Promise<void> {
  app.withTypeProvider<TypeBoxTypeProvider>().route({
    ...routeOptions(listInventoryHistory),
    onRequest: parsePetIdParam,
    handler: async (request, reply) => sendAnswer(reply, await answerListHistory(app.store.history, { petId: request.petId, query: request.query })),
  });
}
