import { Type } from 'typebox';
import type { OperationSpec } from './operation.js';

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
