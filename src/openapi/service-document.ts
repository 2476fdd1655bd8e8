import type { Config } from '../config.js';
import { OPERATIONS } from '../operations/index.js';
import { buildOpenApiDocument } from './document.js';

/** The document this service serves under a config: what GET /v1/openapi.json answers, and, under the defaults, the committed openapi.json. */
export function serviceDocument(config: Pick<Config, 'publicBaseUrl' | 'stagingBaseUrl' | 'bodyLimit' | 'batchMaxChanges'>): Record<string, unknown> {
  return buildOpenApiDocument(OPERATIONS, {
    productionUrl: config.publicBaseUrl,
    stagingUrl: config.stagingBaseUrl,
    bodyLimit: config.bodyLimit,
    bodyLimits: Object.fromEntries(OPERATIONS.flatMap((op) => (op.bodyLimit ? [[op.operationId, op.bodyLimit(config)]] : []))),
  });
}

/** The document as the committed file holds it: two-space JSON with a final newline, so diffs read line by line. */
export function documentFileText(document: unknown): string {
  return `${JSON.stringify(document, null, 2)}\n`;
}
