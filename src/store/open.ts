import { resolve } from 'node:path';
import { openSqliteStore } from './sqlite.js';
import type { InventoryStore } from './store.js';

/** The store that DATABASE_URL names (PD 5.3). */
export async function openStore(databaseUrl: string): Promise<InventoryStore> {
  const target = parseDatabaseUrl(databaseUrl);
  switch (target.backend) {
    case 'sqlite':
      return openSqliteStore(target.filename);
    case 'postgres':
      throw new Error('DATABASE_URL names PostgreSQL, which this build does not support yet; use sqlite:PATH');
  }
}

export type DatabaseTarget = { backend: 'sqlite'; filename: string } | { backend: 'postgres'; url: string };

/**
 * `sqlite:PATH` (relative to the working directory or absolute), `sqlite::memory:`, or
 * `postgres://...` / `postgresql://...`. Throws with a message naming what is wrong.
 */
export function parseDatabaseUrl(databaseUrl: string): DatabaseTarget {
  if (/^postgres(ql)?:\/\//.test(databaseUrl)) return { backend: 'postgres', url: databaseUrl };
  const match = /^sqlite:(.+)$/.exec(databaseUrl);
  if (!match) {
    // Only the scheme is echoed: the rest of a URL may hold a password.
    const scheme = /^[a-z][a-z0-9+.-]*:/i.exec(databaseUrl)?.[0] ?? 'no scheme';
    throw new Error(`DATABASE_URL must be sqlite:PATH, sqlite::memory: or postgres://... (got ${scheme})`);
  }
  const path = match[1]!.replace(/^\/\/(?=\/)/, '');
  return { backend: 'sqlite', filename: path === ':memory:' ? path : resolve(path) };
}
