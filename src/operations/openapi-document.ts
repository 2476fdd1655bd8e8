import { Type } from 'typebox';
import { jsonAnswer } from './answer.js';
import { operation } from './handler.js';
import { META_TAG } from './tags.js';

export const getOpenApiDocument = operation({
  operationId: 'getOpenApiDocument',
  method: 'GET',
  path: '/v1/openapi.json',
  summary: 'This OpenAPI document',
  description: 'The OpenAPI 3.1 document of the running service. No authentication needed.',
  tags: [META_TAG],
  scope: undefined,
  responses: { 200: { description: 'The OpenAPI document', schema: Type.Object({}, { additionalProperties: true }) } },
  extensions: { 'x-extension': true },
}, ({ openApiDocumentJson }) => {
  // Serialised once, at start; anyone may cache it for a while.
  const answer = jsonAnswer(200, openApiDocumentJson, { 'cache-control': 'public, max-age=300' });
  return () => answer;
});
