import type { IncomingHttpHeaders } from 'node:http';
import { Type } from 'typebox';
import type { ListCache } from '../cache/list-cache.js';
import { InventoryItem, InventoryList } from '../schemas/inventory.js';
import { JSON_CONTENT_TYPE, type Answer } from './answer.js';
import { ifNoneMatchHits } from './conditional.js';
import { negotiateEncoding } from './encoding.js';
import { headerValue } from './header-value.js';
import { operation } from './handler.js';
import { EVENTS_HEAD_DOC, EVENTS_HEAD_HEADER } from './list-events.js';
import { NoQuery } from './operation.js';
import { INVENTORY_TAG } from './tags.js';

export const listInventory = operation({
  operationId: 'listInventory',
  method: 'GET',
  path: '/v1/inventory',
  summary: 'List stock levels',
  description: 'Returns current stock levels for all pets in the store, ordered by petId ascending.',
  tags: [INVENTORY_TAG],
  scope: 'inventory:read',
  requestHeaders: {
    'If-None-Match': { description: 'An ETag of an earlier answer: 304 while nothing in the store has changed', schema: Type.String() },
  },
  querystring: NoQuery,
  responses: {
    200: {
      description: 'The stock of every pet; br or gzip when Accept-Encoding allows and the list is over 1 KiB',
      schema: InventoryList,
      headers: {
        ETag: { description: 'Strong entity tag of the list at this store version (one per content coding)', schema: Type.String(), required: true },
        'X-Events-Head': { ...EVENTS_HEAD_DOC, description: `${EVENTS_HEAD_DOC.description} (extension: change events)` },
      },
    },
    304: { description: 'Nothing changed since the If-None-Match ETag', headers: { 'X-Events-Head': EVENTS_HEAD_DOC } },
  },
  contractStatuses: [200, 401],
  components: { InventoryItem },
}, ({ listCache }) => (request) => answerListInventory(listCache, request));

/**
 * GET /v1/inventory: the list at the store version read after the request arrived, in the best
 * coding the client accepts (always with Vary: Accept-Encoding), or 304 for a current If-None-Match;
 * either with X-Events-Head, the log's head read with that version.
 */
export async function answerListInventory(listCache: Pick<ListCache, 'current'>, request: { headers: IncomingHttpHeaders }): Promise<Answer> {
  const snapshot = await listCache.current();
  const encoding = negotiateEncoding(headerValue(request, 'accept-encoding'), snapshot.body.length);
  const etag = snapshot.etag(encoding);
  const head = String(snapshot.eventsHead);
  if (ifNoneMatchHits(headerValue(request, 'if-none-match'), snapshot.etags)) {
    return { status: 304, headers: { vary: 'Accept-Encoding', etag, [EVENTS_HEAD_HEADER]: head } };
  }
  if (!encoding) return { status: 200, headers: { vary: 'Accept-Encoding', etag, [EVENTS_HEAD_HEADER]: head, 'content-type': JSON_CONTENT_TYPE }, body: snapshot.body };
  const headers = { vary: 'Accept-Encoding', etag, [EVENTS_HEAD_HEADER]: head, 'content-type': JSON_CONTENT_TYPE, 'content-encoding': encoding };
  return { status: 200, headers, body: await snapshot.encoded(encoding) };
}
