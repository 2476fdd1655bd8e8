import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AUTH_MESSAGES, Authenticator, KEY_CACHE_TTL_MS } from '../../src/auth/authenticator.js';
import { generateApiKey, hashKey, type ApiKeyRecord, type Principal } from '../../src/domain/api-key.js';
import { ApiError } from '../../src/errors.js';

/** An Authenticator over keys held in a map by hash, which a test may revoke; counts the store's lookups. */
function withKeys(...names: string[]) {
  const byHash = new Map<string, ApiKeyRecord>();
  const keys = names.map((name) => {
    const made = generateApiKey({ name, environment: 'production', scopes: ['inventory:read'], expiresAt: null });
    byHash.set(made.record.keyHash, made.record);
    return made;
  });
  const lookups: string[] = [];
  const hashed: string[] = [];
  const authenticator = new Authenticator(
    {
      findApiKeyByHash: async (keyHash) => {
        lookups.push(keyHash);
        return byHash.get(keyHash);
      },
      touchApiKey: async () => {},
    },
    'production',
    (err) => {
      throw err;
    },
    (token) => {
      hashed.push(token);
      return hashKey(token);
    },
  );
  return { authenticator, keys, lookups, hashed };
}

const nameOf = (result: Principal | ApiError | undefined) => (result instanceof ApiError ? `${result.status} ${result.message}` : result?.keyName);

test('on one connection: each request is judged by its own header, whichever header came before on it', async () => {
  const { authenticator, keys } = withKeys('till', 'warehouse');
  const [till, warehouse] = keys.map((k) => `Bearer ${k.key}`) as [string, string];
  const connection = {};
  const seen = [];
  for (const header of [till, till, warehouse, till, 'Bearer live_unknown', '', 'Basic abc', till, undefined]) {
    seen.push(nameOf(await authenticator.authenticate(header, connection)));
  }
  assert.deepEqual(seen, [
    'till',
    'till',
    'warehouse',
    'till',
    `401 ${AUTH_MESSAGES.invalid}`,
    `401 ${AUTH_MESSAGES.missing}`,
    `401 ${AUTH_MESSAGES.scheme}`,
    'till',
    `401 ${AUTH_MESSAGES.missing}`,
  ]);
});

test('a key seen before on a connection is still looked up: revoked in the store, it is refused once the cached lookup expires', async () => {
  const { authenticator, keys, lookups } = withKeys('till');
  const header = `Bearer ${keys[0]!.key}`;
  const connection = {};
  const start = new Date();
  assert.equal(nameOf(await authenticator.authenticate(header, connection, start)), 'till');
  assert.equal(nameOf(authenticator.authenticateFromCache(header, connection, start)), 'till');
  keys[0]!.record.revokedAt = start;
  // Decisions 2.6: every server refuses a revoked key within 2 seconds, the longest it keeps a lookup.
  assert.ok(KEY_CACHE_TTL_MS <= 2000, `a lookup is kept ${KEY_CACHE_TTL_MS} ms`);
  const later = new Date(start.getTime() + KEY_CACHE_TTL_MS + 1);
  assert.equal(authenticator.authenticateFromCache(header, connection, later), undefined, 'the cached lookup has expired: only the store can tell');
  assert.equal(nameOf(await authenticator.authenticate(header, connection, later)), `401 ${AUTH_MESSAGES.revoked}`);
  assert.equal(lookups.length, 2);
  assert.deepEqual(new Set(lookups), new Set([keys[0]!.record.keyHash]));
});

test('two connections, each with its own key, never answer with the other\'s', async () => {
  const { authenticator, keys } = withKeys('till', 'warehouse');
  const [a, b] = [{}, {}];
  for (let i = 0; i < 3; i++) {
    assert.equal(nameOf(await authenticator.authenticate(`Bearer ${keys[0]!.key}`, a)), 'till');
    assert.equal(nameOf(await authenticator.authenticate(`Bearer ${keys[1]!.key}`, b)), 'warehouse');
  }
  assert.equal(nameOf(await authenticator.authenticate(`Bearer ${keys[1]!.key}`, a)), 'warehouse');
  assert.equal(nameOf(await authenticator.authenticate(`Bearer ${keys[0]!.key}`)), 'till', 'without a connection, as before');
});

test('a connection that sends the same header again is not hashed again; another header, or another connection, is', async () => {
  const { authenticator, keys, hashed } = withKeys('till', 'warehouse');
  const [till, warehouse] = keys.map((k) => `Bearer ${k.key}`) as [string, string];
  const first = {};
  const second = {};
  for (let i = 0; i < 3; i++) assert.equal(nameOf(await authenticator.authenticate(till, first)), 'till');
  assert.equal(nameOf(authenticator.authenticateFromCache(till, first)), 'till');
  assert.equal(hashed.length, 1, 'one hash for four requests with one header on one connection');
  assert.equal(nameOf(await authenticator.authenticate(warehouse, first)), 'warehouse');
  assert.equal(nameOf(await authenticator.authenticate(till, second)), 'till');
  assert.equal(nameOf(await authenticator.authenticate(till)), 'till');
  assert.equal(nameOf(await authenticator.authenticate(till)), 'till');
  assert.deepEqual(hashed, [keys[0]!.key, keys[1]!.key, keys[0]!.key, keys[0]!.key, keys[0]!.key], 'a new header, a new connection, and no connection at all are each hashed');
});
