import { Type, type Static } from 'typebox';
import { Nullable } from './nullable.js';
import { SCOPES } from './values.js';

export const Scope = Type.Unsafe<(typeof SCOPES)[number]>({
  type: 'string',
  enum: [...SCOPES],
  description: 'A permission of an API key: inventory:read (the GET operations of the inventory), inventory:write (GET and PATCH), webhooks:manage (GET /v1/webhooks)',
});

/**
 * The API key that made the request, as the store holds it (extension: GET /v1/key). Never the
 * key itself nor its hash: only what a user may see of their own key, so an app can say what
 * the key allows before the user tries something it does not.
 */
export const CallingKey = Type.Object(
  {
    id: Type.String({ description: 'The key\'s id, as in `keys list` and in the change history' }),
    name: Type.String({ description: 'The name the key was given when it was created' }),
    scopes: Type.Array(Scope, {
      minItems: 1,
      uniqueItems: true,
      description: 'The scopes the key holds, as stored; inventory:write allows reading too, so a key without it is read-only',
    }),
    expiresAt: Nullable(Type.String({ format: 'date-time' }), {
      description: 'When the key stops working (RFC 3339, UTC), or null when it does not expire',
    }),
  },
  { additionalProperties: false },
);
export type CallingKey = Static<typeof CallingKey>;
