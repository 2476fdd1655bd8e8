import { Type, type Static } from 'typebox';
import { historyItem, historyPageOf, parseHistoryCursor } from '../domain/history.js';
import { stringifyJson } from '../json.js';
import { HistoryItem, HistoryPage } from '../schemas/inventory.js';
import type { History } from '../store/store.js';
import { jsonAnswer, type Answer } from './answer.js';
import { operation } from './handler.js';
import { notFound, PET_ID_PARAM } from './item-parts.js';
import { INVENTORY_TAG } from './tags.js';
import { invalidQueryParameter } from './validation.js';

export const HISTORY_LIMIT_MAX = 500;
export const HISTORY_LIMIT_DEFAULT = 100;

const HistoryQuery = Type.Object(
  {
    // A decimal string, not an integer schema: conversion would quietly truncate 2.5 to 2.
    limit: Type.Optional(
      Type.String({ pattern: '^(500|[1-4][0-9]{2}|[1-9][0-9]?)$', description: `Changes per page, 1 to ${HISTORY_LIMIT_MAX} (default ${HISTORY_LIMIT_DEFAULT})` }),
    ),
    cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 40, description: 'nextCursor of the previous page' })),
  },
  { additionalProperties: false },
);

/** What each query parameter accepts, in the words its refusal says. */
const HISTORY_QUERY_ACCEPTS = {
  limit: `an integer from 1 to ${HISTORY_LIMIT_MAX}`,
  cursor: 'the nextCursor of the previous page, unchanged',
} as const satisfies Record<keyof Static<typeof HistoryQuery>, string>;

export const listInventoryHistory = operation({
  operationId: 'listInventoryHistory',
  method: 'GET',
  path: '/v1/inventory/{petId}/history',
  summary: 'Change history of one stock level',
  description:
    'Every change of the pet\'s quantity, newest first: previous and new quantity, when, by which API key (id and name, never the key), ' +
    'the request id and the reason sent with it. Pages with limit and cursor.',
  tags: [INVENTORY_TAG],
  scope: 'inventory:read',
  pathParams: PET_ID_PARAM,
  querystring: HistoryQuery,
  queryAccepts: HISTORY_QUERY_ACCEPTS,
  responses: {
    200: { description: 'One page of changes, newest first', schema: HistoryPage },
    404: { description: 'The pet has no inventory entry, current or retired', errorCodes: ['not_found'] },
  },
  extensions: { 'x-extension': true },
  components: { HistoryItem, HistoryPage },
}, ({ store }) => (request) => answerListHistory(store.history, request));

function parseCursor(cursor: string | undefined): bigint | undefined {
  if (cursor === undefined) return undefined;
  const rowId = parseHistoryCursor(cursor);
  if (rowId === undefined) throw invalidQueryParameter('cursor', HISTORY_QUERY_ACCEPTS.cursor);
  return rowId;
}

/** GET /v1/inventory/{petId}/history: one page of changes, newest first, and the cursor of the next one. */
export async function answerListHistory(
  history: Pick<History, 'listHistory'>,
  request: { petId: bigint; query: Static<typeof HistoryQuery> },
): Promise<Answer> {
  const limit = request.query.limit === undefined ? HISTORY_LIMIT_DEFAULT : Number(request.query.limit);
  const before = parseCursor(request.query.cursor);
  // One row more than asked tells whether another page follows.
  const rows = await history.listHistory(request.petId, { limit: limit + 1, ...(before !== undefined ? { before } : {}) });
  if (!rows) throw notFound(request.petId);
  const page = historyPageOf(rows, limit);
  const body: Static<typeof HistoryPage> = { items: page.rows.map(historyItem), nextCursor: page.nextCursor };
  return jsonAnswer(200, stringifyJson(body));
}
