import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { sendAnswer } from '../http/fastify-pipeline.js';
import { answerListWebhooks, listWebhooks } from '../operations/list-webhooks.js';
import { routeOptions } from './route-options.js';

/** GET /v1/webhooks: the endpoints' delivery state, read-only (the CLI manages them). */
export async function webhookRoutes(app: FastifyInstance): Promise<void> {
  app.withTypeProvider<TypeBoxTypeProvider>().route({
    ...routeOptions(listWebhooks),
    handler: async (_request, reply) => sendAnswer(reply, await answerListWebhooks(app.store)),
  });
}
