import type Database from 'better-sqlite3';
import type { ApiKeyRecord, Environment, Scope } from '../../domain/api-key.js';
import type { ApiKeys } from '../store.js';
import { briefly, type Run } from './connection.js';

interface KeyRow {
  id: string;
  name: string;
  environment: string;
  key_hash: string;
  hint: string;
  scopes: string;
  created_at: string;
  last_used_at: string | null;
  expires_at: string | null;
  revoked_at: string | null;
}

const KEY_COLUMNS = 'id, name, environment, key_hash, hint, scopes, created_at, last_used_at, expires_at, revoked_at';
const KEY_VALUES = '@id, @name, @environment, @key_hash, @hint, @scopes, @created_at, @last_used_at, @expires_at, @revoked_at';

/** The SQLite store's API key records, on the event loop's connection. */
export function keys(db: Database.Database, run: Run): ApiKeys {
  const stmt = {
    insert: db.prepare(`INSERT INTO api_keys (${KEY_COLUMNS}) VALUES (${KEY_VALUES})`),
    insertFirst: db.prepare(`INSERT INTO api_keys (${KEY_COLUMNS}) SELECT ${KEY_VALUES} WHERE NOT EXISTS (SELECT 1 FROM api_keys)`),
    byHash: db.prepare('SELECT * FROM api_keys WHERE key_hash = ?'),
    list: db.prepare('SELECT * FROM api_keys ORDER BY created_at, id'),
    revoke: db.prepare('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL'),
    touch: db.prepare('UPDATE api_keys SET last_used_at = ? WHERE id = ?'),
  };
  return {
    insertApiKey: async (record) => void run(() => stmt.insert.run(toKeyRow(record))),
    // IMMEDIATE: the write lock is taken before the check, so two processes cannot both see no key.
    insertFirstApiKey: async (record) => run(() => db.transaction(() => stmt.insertFirst.run(toKeyRow(record)).changes === 1).immediate()),
    findApiKeyByHash: async (keyHash) =>
      run(() => {
        const row = stmt.byHash.get(keyHash) as KeyRow | undefined;
        return row && toKeyRecord(row);
      }),
    listApiKeys: async () => run(() => (stmt.list.all() as KeyRow[]).map(toKeyRecord)),
    revokeApiKey: async (id, at) => run(() => stmt.revoke.run(at.toISOString(), id).changes === 1),
    // A note of use, not a change anyone waits for: it gives way to the writer thread rather than block the loop.
    touchApiKey: async (id, at) => void run(() => briefly(db, () => stmt.touch.run(at.toISOString(), id))),
  };
}

function toKeyRow(r: ApiKeyRecord): KeyRow {
  return {
    id: r.id,
    name: r.name,
    environment: r.environment,
    key_hash: r.keyHash,
    hint: r.hint,
    scopes: r.scopes.join(' '),
    created_at: r.createdAt.toISOString(),
    last_used_at: r.lastUsedAt?.toISOString() ?? null,
    expires_at: r.expiresAt?.toISOString() ?? null,
    revoked_at: r.revokedAt?.toISOString() ?? null,
  };
}

function toKeyRecord(row: KeyRow): ApiKeyRecord {
  const date = (s: string | null) => (s === null ? null : new Date(s));
  return {
    id: row.id,
    name: row.name,
    environment: row.environment as Environment,
    keyHash: row.key_hash,
    hint: row.hint,
    scopes: row.scopes.split(' ').filter(Boolean) as Scope[],
    createdAt: new Date(row.created_at),
    lastUsedAt: date(row.last_used_at),
    expiresAt: date(row.expires_at),
    revokedAt: date(row.revoked_at),
  };
}
