import type { Principal } from '../domain/api-key.js';
import { CallingKey, Scope } from '../schemas/calling-key.js';
import { jsonAnswer, type Answer } from './answer.js';
import { operation } from './handler.js';
import { NoQuery } from './operation.js';
import { KEYS_TAG } from './tags.js';

export const getCallingKey = operation({
  operationId: 'getCallingKey',
  method: 'GET',
  path: '/v1/key',
  summary: 'The API key making the call',
  description:
    'Describes the API key that authenticated this request: its id, name, scopes and expiry (never the key nor its hash). ' +
    'An app reads it once to know whether the key may change stock before its user tries to.',
  tags: [KEYS_TAG],
  // Every key holds at least inventory:read: any valid key may ask about itself.
  scope: 'inventory:read',
  querystring: NoQuery,
  responses: {
    200: { description: 'The calling key', schema: CallingKey },
  },
  extensions: { 'x-extension': true },
  components: { Scope, CallingKey },
}, () => (request) => answerGetCallingKey(request.principal));

/** GET /v1/key: the key as authentication found it in the store (a lookup at most KEY_CACHE_TTL_MS old). */
export function answerGetCallingKey(principal: Principal): Answer {
  const body: CallingKey = {
    id: principal.keyId,
    name: principal.keyName,
    scopes: [...principal.scopes],
    expiresAt: principal.expiresAt?.toISOString() ?? null,
  };
  return jsonAnswer(200, JSON.stringify(body));
}
