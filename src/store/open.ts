import { resolve } from 'node:path';
import type { Store } from './store.js';

/** How a store is opened, whichever the backend. */
export interface StoreOpenOptions {
  /** STORE_TIMEOUT_MS: the longest a request waits on the database. */
  timeoutMs?: number;
  /**
   * true: a change of quantity (a PATCH, the group commit) appends no event, the rest of its
   * transaction unchanged. It breaks the log's promise, so it is no setting: it exists only so that
   * `npm run bench` can measure what the event log costs a PATCH, on the same build.
   */
  omitChangeEvents?: boolean;
  /** DATABASE_DIRECT_URL: for PostgreSQL, the same database not through a pooler, for the migrations and the event log's LISTEN. */
  directUrl?: string;
}

/**
 * The store that DATABASE_URL names: an embedded SQLite file by default, PostgreSQL for several
 * instances on one database. Only the chosen backend's driver is loaded.
 */
export async function openStore(databaseUrl: string, options: StoreOpenOptions = {}): Promise<Store> {
  const target = parseDatabaseUrl(databaseUrl);
  const { timeoutMs, omitChangeEvents, directUrl } = options;
  switch (target.backend) {
    case 'sqlite':
      return (await import('./sqlite/open.js')).openStore(target.filename, { timeoutMs, omitChangeEvents });
    case 'postgres':
      // timeoutMs: STORE_TIMEOUT_MS, the longest a request waits on the database.
      return (await import('./postgres/open.js')).openStore(target.url, { schema: target.schema, timeoutMs, omitChangeEvents, directUrl });
  }
}

export type DatabaseTarget =
  | { backend: 'sqlite'; filename: string }
  | { backend: 'postgres'; url: string; schema?: string };

/**
 * `sqlite:PATH` (relative to the working directory or absolute), `sqlite::memory:`, or
 * `postgres://...` / `postgresql://...`, optionally `?schema=NAME` for the schema to keep the tables
 * in (created if missing). Throws with a message naming what is wrong.
 */
export function parseDatabaseUrl(databaseUrl: string): DatabaseTarget {
  if (/^postgres(ql)?:\/\//.test(databaseUrl)) {
    // pg ignores parameters it does not know, so the URL is passed on whole.
    const schema = /[?&]schema=([^&#]*)/.exec(databaseUrl)?.[1];
    return schema === undefined ? { backend: 'postgres', url: databaseUrl } : { backend: 'postgres', url: databaseUrl, schema };
  }
  const match = /^sqlite:(.+)$/.exec(databaseUrl);
  if (!match) {
    // Only the scheme is echoed: the rest of a URL may hold a password.
    const scheme = /^[a-z][a-z0-9+.-]*:/i.exec(databaseUrl)?.[0] ?? 'no scheme';
    throw new Error(`DATABASE_URL must be sqlite:PATH, sqlite::memory: or postgres://... (got ${scheme})`);
  }
  const path = match[1]!.replace(/^\/\/(?=\/)/, '');
  return { backend: 'sqlite', filename: path === ':memory:' ? path : resolve(path) };
}
