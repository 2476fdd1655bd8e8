import type { ApiKeyRecord } from '../../domain/api-key.js';
import type { ApiKeys } from '../store.js';
import { inTransaction, MIGRATION_LOCK_KEY, type Pooled, type Statement } from './connection.js';

/** Selected under the names of ApiKeyRecord; pg already returns TIMESTAMPTZ as Date and TEXT[] as string[]. */
const KEY_COLUMNS = `id, name, environment, key_hash AS "keyHash", hint, scopes, created_at AS "createdAt",
  last_used_at AS "lastUsedAt", expires_at AS "expiresAt", revoked_at AS "revokedAt"`;

const STATEMENTS = {
  insert: {
    name: 'key-insert',
    text: `INSERT INTO api_keys (id, name, environment, key_hash, hint, scopes, created_at, last_used_at, expires_at, revoked_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
  },
  // Under the first-key lock: read committed sees a key another instance committed while we waited.
  insertFirst: {
    name: 'key-insert-first',
    text: `INSERT INTO api_keys (id, name, environment, key_hash, hint, scopes, created_at, last_used_at, expires_at, revoked_at)
           SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10 WHERE NOT EXISTS (SELECT 1 FROM api_keys)`,
  },
  byHash: { name: 'key-by-hash', text: `SELECT ${KEY_COLUMNS} FROM api_keys WHERE key_hash = $1` },
  list: { name: 'key-list', text: `SELECT ${KEY_COLUMNS} FROM api_keys ORDER BY created_at, id` },
  revoke: { name: 'key-revoke', text: 'UPDATE api_keys SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL' },
  touch: { name: 'key-touch', text: 'UPDATE api_keys SET last_used_at = $2 WHERE id = $1' },
} as const satisfies Record<string, Statement>;

/** The PostgreSQL store's API key records. */
export function keys({ pool, query, run }: Pooled): ApiKeys {
  return {
    insertApiKey: async (record) => void (await query(STATEMENTS.insert, keyValues(record))),
    insertFirstApiKey: (record) =>
      run(() =>
        inTransaction(pool, async (client) => {
          // Instances starting together take turns, so only the first finds no key.
          await client.query("SELECT pg_advisory_xact_lock($1, hashtext('first-api-key:' || current_schema()))", [MIGRATION_LOCK_KEY]);
          return (await client.query(STATEMENTS.insertFirst.text, keyValues(record))).rowCount === 1;
        }),
      ),
    findApiKeyByHash: async (keyHash) => (await query<ApiKeyRecord>(STATEMENTS.byHash, [keyHash])).rows[0],
    listApiKeys: async () => (await query<ApiKeyRecord>(STATEMENTS.list)).rows,
    revokeApiKey: async (id, at) => (await query(STATEMENTS.revoke, [id, at.toISOString()])).rowCount === 1,
    touchApiKey: async (id, at) => void (await query(STATEMENTS.touch, [id, at.toISOString()])),
  };
}

/** A key record as the parameters of insert and insertFirst. */
function keyValues(r: ApiKeyRecord): unknown[] {
  return [
    r.id,
    r.name,
    r.environment,
    r.keyHash,
    r.hint,
    r.scopes,
    r.createdAt.toISOString(),
    r.lastUsedAt?.toISOString() ?? null,
    r.expiresAt?.toISOString() ?? null,
    r.revokedAt?.toISOString() ?? null,
  ];
}
