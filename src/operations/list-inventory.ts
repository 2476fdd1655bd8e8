import type { IncomingHttpHeaders } from 'node:http';
import { Type } from 'typebox';
import type { ListCache } from '../cache/list-cache.js';
import { InventoryList } from '../schemas/inventory.js';
import { JSON_CONTENT_TYPE, type Answer } from './answer.js';
import { ifNoneMatchHits } from './conditional.js';
import { negotiateEncoding } from './encoding.js';
import { headerValue } from './header-value.js';
import { NoQuery, type OperationSpec } from './operation.js';

export const listInventory = {
  operationId: 'listInventory',
  method: 'GET',
  path: '/v1/inventory',
  summary: 'List stock levels',
  description: 'Returns current stock levels for all pets in the store, ordered by petId ascending.',
  tags: ['inventory'],
  scope: 'inventory:read',
  requestHeaders: {
    'If-None-Match': { description: 'An ETag of an earlier answer: 304 while nothing in the store has changed', schema: Type.String() },
  },
  querystring: NoQuery,
  responses: {
    200: {
      description: 'The stock of every pet; br or gzip when Accept-Encoding allows and the list is over 1 KiB',
      schema: InventoryList,
      headers: { ETag: { description: 'Strong entity tag of the list at this store version (one per content coding)', schema: Type.String(), required: true } },
    },
    304: { description: 'Nothing changed since the If-None-Match ETag' },
  },
  contractStatuses: [200, 401],
} as const satisfies OperationSpec;

/**
 * GET /v1/inventory: the list at the store version read after the request arrived, in the best
 * coding the client accepts (always with Vary: Accept-Encoding), or 304 for a current If-None-Match.
 */
export async function answerListInventory(listCache: Pick<ListCache, 'current'>, request: { headers: IncomingHttpHeaders }): Promise<Answer> {
  const snapshot = await listCache.current();
  const encoding = negotiateEncoding(headerValue(request, 'accept-encoding'), snapshot.body.length);
  const etag = snapshot.etag(encoding);
  if (ifNoneMatchHits(headerValue(request, 'if-none-match'), snapshot.etags)) return { status: 304, headers: { vary: 'Accept-Encoding', etag } };
  if (!encoding) return { status: 200, headers: { vary: 'Accept-Encoding', etag, 'content-type': JSON_CONTENT_TYPE }, body: snapshot.body };
  const headers = { vary: 'Accept-Encoding', etag, 'content-type': JSON_CONTENT_TYPE, 'content-encoding': encoding };
  return { status: 200, headers, body: await snapshot.encoded(encoding) };
}
