/**
 * PostgreSQL schema versions, applied in order at start under an advisory lock; an applied
 * version is never edited, a change is a new version. Same tables and columns as SQLite's.
 */
export const POSTGRES_MIGRATIONS: readonly { version: number; name: string; sql: string }[] = [
  {
    version: 1,
    name: 'inventory and api keys',
    sql: `
      CREATE TABLE inventory (
        pet_id     BIGINT      PRIMARY KEY,
        quantity   INTEGER     NOT NULL CHECK (quantity BETWEEN 0 AND 2147483647),
        status     TEXT        NOT NULL CHECK (status IN ('available', 'pending', 'sold')),
        created_at TIMESTAMPTZ NOT NULL,
        updated_at TIMESTAMPTZ NOT NULL
      );

      CREATE TABLE api_keys (
        id           TEXT        PRIMARY KEY,
        name         TEXT        NOT NULL,
        environment  TEXT        NOT NULL CHECK (environment IN ('production', 'staging')),
        key_hash     TEXT        NOT NULL UNIQUE,
        hint         TEXT        NOT NULL,
        scopes       TEXT[]      NOT NULL,
        created_at   TIMESTAMPTZ NOT NULL,
        last_used_at TIMESTAMPTZ,
        expires_at   TIMESTAMPTZ,
        revoked_at   TIMESTAMPTZ
      );
    `,
  },
];
