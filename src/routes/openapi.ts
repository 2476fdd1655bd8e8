import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { routeOptions, type OperationSpec } from './operation.js';

export const getOpenApiDocument = {
  operationId: 'getOpenApiDocument',
  method: 'GET',
  path: '/v1/openapi.json',
  summary: 'This OpenAPI document',
  description: 'The OpenAPI 3.1 document of the running service. No authentication needed.',
  tags: ['meta'],
  scope: undefined,
  responses: { 200: { description: 'The OpenAPI document', schema: Type.Object({}, { additionalProperties: true }) } },
  extensions: { 'x-extension': true },
} as const satisfies OperationSpec;

/** Serves the document, serialised once at start. */
export function openApiRoutes(documentJson: string) {
  return async (app: FastifyInstance): Promise<void> => {
    app.route({
      ...routeOptions(getOpenApiDocument),
      handler: async (_request, reply) => {
        reply.type('application/json; charset=utf-8').header('cache-control', 'public, max-age=300');
        return documentJson;
      },
    });
  };
}
