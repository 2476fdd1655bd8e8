import type { FastifyInstance } from 'fastify';
import { jsonAnswer } from '../operations/answer.js';
import { getOpenApiDocument } from '../operations/openapi-document.js';
import { sendAnswer } from '../http/fastify-pipeline.js';
import { routeOptions } from './route-options.js';

/** Serves the document, serialised once at start; anyone may cache it for a while. */
export function openApiRoutes(documentJson: string) {
  const answer = jsonAnswer(200, documentJson, { 'cache-control': 'public, max-age=300' });
  return async (app: FastifyInstance): Promise<void> => {
    app.route({ ...routeOptions(getOpenApiDocument), handler: async (_request, reply) => sendAnswer(reply, answer) });
  };
}
