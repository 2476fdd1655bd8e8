import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { sendAnswer } from '../http/fastify-pipeline.js';
import { answerGetCallingKey, getCallingKey } from '../operations/get-calling-key.js';
import { principalOf, routeOptions } from './route-options.js';

export async function callingKeyRoutes(app: FastifyInstance): Promise<void> {
  app.withTypeProvider<TypeBoxTypeProvider>().route({
    ...routeOptions(getCallingKey),
    handler: async (request, reply) => sendAnswer(reply, answerGetCallingKey(principalOf(request))),
  });
}
