import type { IncomingHttpHeaders } from 'node:http';
import { Type } from 'typebox';
import { etagOf, itemJson } from '../domain/inventory.js';
import { InventoryItem } from '../schemas/inventory.js';
import type { Entries } from '../store/store.js';
import { jsonAnswer, type Answer } from './answer.js';
import { ifNoneMatchHits } from './conditional.js';
import { operation } from './handler.js';
import { headerValue } from './header-value.js';
import { ETAG_HEADER, NOT_FOUND, notFound, PET_ID_PARAM } from './item-parts.js';
import { NoQuery } from './operation.js';
import { INVENTORY_TAG } from './tags.js';

export const getInventoryItem = operation({
  operationId: 'getInventoryItem',
  method: 'GET',
  path: '/v1/inventory/{petId}',
  summary: 'Get one stock level',
  description: 'Returns the entry of one pet with its ETag, the start of a safe read-modify-write (If-Match on the PATCH).',
  tags: [INVENTORY_TAG],
  scope: 'inventory:read',
  pathParams: PET_ID_PARAM,
  requestHeaders: {
    'If-None-Match': { description: 'An ETag from an earlier answer: 304 while the entry still has that version', schema: Type.String() },
  },
  querystring: NoQuery,
  responses: {
    200: { description: 'The entry', schema: InventoryItem, headers: ETAG_HEADER },
    304: { description: 'The entry still has the version of the If-None-Match ETag', headers: ETAG_HEADER },
    404: NOT_FOUND,
  },
  extensions: { 'x-extension': true },
}, ({ store }) => (request) => answerGetInventoryItem(store.entries, request));

/** GET /v1/inventory/{petId}: the entry with its ETag, or 304 while If-None-Match names its version. */
export async function answerGetInventoryItem(
  entries: Pick<Entries, 'getEntry'>,
  request: { petId: bigint; headers: IncomingHttpHeaders },
): Promise<Answer> {
  const entry = await entries.getEntry(request.petId);
  if (!entry) throw notFound(request.petId);
  const etag = etagOf(entry.version);
  if (ifNoneMatchHits(headerValue(request, 'if-none-match'), [etag])) return { status: 304, headers: { etag } };
  return jsonAnswer(200, itemJson(entry.item), { etag });
}
