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
  {
    version: 2,
    name: 'entry versions, change history, idempotency records, store change counter',
    sql: `
      ALTER TABLE inventory ADD COLUMN version BIGINT NOT NULL DEFAULT 1;
      ALTER TABLE inventory ADD COLUMN change_seq BIGINT NOT NULL DEFAULT 0;
      CREATE INDEX inventory_change_seq ON inventory (change_seq);

      -- One row, updated last in every writing transaction: its row lock orders commits, so
      -- change_seq values become visible in order and "changed since N" never misses a row.
      CREATE TABLE store_state (
        id      INTEGER PRIMARY KEY CHECK (id = 1),
        version BIGINT  NOT NULL
      );
      INSERT INTO store_state (id, version) VALUES (1, 0);

      CREATE TABLE inventory_history (
        id                BIGSERIAL   PRIMARY KEY,
        pet_id            BIGINT      NOT NULL,
        previous_quantity INTEGER     NOT NULL,
        quantity          INTEGER     NOT NULL,
        at                TIMESTAMPTZ NOT NULL,
        key_id            TEXT        NOT NULL,
        key_name          TEXT        NOT NULL,
        request_id        TEXT        NOT NULL,
        reason            TEXT        CHECK (reason IN ('received', 'returned', 'correction'))
      );
      CREATE INDEX inventory_history_pet ON inventory_history (pet_id, id);

      CREATE TABLE idempotency_records (
        api_key_id  TEXT        NOT NULL,
        idem_key    TEXT        NOT NULL,
        fingerprint TEXT        NOT NULL,
        outcome     TEXT,
        created_at  TIMESTAMPTZ NOT NULL,
        expires_at  TIMESTAMPTZ NOT NULL,
        PRIMARY KEY (api_key_id, idem_key)
      );
      CREATE INDEX idempotency_records_expiry ON idempotency_records (expires_at);
    `,
  },
];
