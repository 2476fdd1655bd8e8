import { escapeIdentifier } from 'pg';
import { inBulkTransaction } from './bulk.js';
import { MIGRATION_LOCK_KEY, type StorePool } from './connection.js';

/** A schema version. */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/**
 * PostgreSQL schema versions, applied in order at start under an advisory lock; an applied
 * version is never edited, a change is a new version. Same tables and columns as SQLite's.
 */
export const MIGRATIONS: readonly Migration[] = [
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
  {
    version: 4,
    name: 'idempotency keys kept as their SHA-256, and counted per API key',
    // A key is whatever a client sends: only its hash is kept. The records already kept are
    // hashed here, so a retry sent across the upgrade is still replayed.
    sql: `
      CREATE TABLE idempotency_records_hashed (
        api_key_id  TEXT        NOT NULL,
        key_hash    TEXT        NOT NULL, -- hex SHA-256 of the Idempotency-Key
        fingerprint TEXT        NOT NULL,
        outcome     TEXT,
        created_at  TIMESTAMPTZ NOT NULL,
        expires_at  TIMESTAMPTZ NOT NULL,
        CONSTRAINT idempotency_records_hashed_pkey PRIMARY KEY (api_key_id, key_hash)
      );
      INSERT INTO idempotency_records_hashed
        SELECT api_key_id, encode(sha256(convert_to(idem_key, 'UTF8')), 'hex'), fingerprint, outcome, created_at, expires_at
        FROM idempotency_records;
      DROP TABLE idempotency_records;
      ALTER TABLE idempotency_records_hashed RENAME TO idempotency_records;
      ALTER INDEX idempotency_records_hashed_pkey RENAME TO idempotency_records_pkey;
      -- One API key's records by expiry: its oldest live one (Retry-After) and its expired ones (purge), without a scan.
      CREATE INDEX idempotency_records_key_expiry ON idempotency_records (api_key_id, expires_at);

      -- How many records (live or expired) each API key holds, kept by the triggers: the cap is
      -- checked without counting rows. Every transaction that writes an API key's records locks
      -- its row here first, so they take turns per API key and the count they read is exact.
      CREATE TABLE idempotency_counts (api_key_id TEXT PRIMARY KEY, records INTEGER NOT NULL);
      INSERT INTO idempotency_counts (api_key_id, records) SELECT api_key_id, count(*) FROM idempotency_records GROUP BY api_key_id;
      CREATE FUNCTION idempotency_records_added() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
        INSERT INTO idempotency_counts AS c (api_key_id, records) SELECT api_key_id, count(*) FROM added GROUP BY api_key_id
          ON CONFLICT (api_key_id) DO UPDATE SET records = c.records + excluded.records;
        RETURN NULL;
      END $$;
      CREATE FUNCTION idempotency_records_removed() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
        UPDATE idempotency_counts c SET records = c.records - r.n
          FROM (SELECT api_key_id, count(*) AS n FROM removed GROUP BY api_key_id) r WHERE c.api_key_id = r.api_key_id;
        RETURN NULL;
      END $$;
      -- Per statement: one update of the counts per batch or purge step. An upsert that updates a record is neither.
      CREATE TRIGGER idempotency_records_added AFTER INSERT ON idempotency_records
        REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION idempotency_records_added();
      CREATE TRIGGER idempotency_records_removed AFTER DELETE ON idempotency_records
        REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION idempotency_records_removed();
    `,
  },
  {
    version: 5,
    name: 'retired entries',
    sql: `
      -- When the entry was retired (pets remove); NULL while the store stocks it. The row stays, so its history does.
      ALTER TABLE inventory ADD COLUMN retired_at TIMESTAMPTZ;
    `,
  },
  {
    version: 6,
    name: 'bulk writes tell readers to reload the list',
    sql: `
      -- The store version of the last bulk write (an import of many entries), whose rows keep no change_seq of their own:
      -- a reader of changesSince from before it reads the whole list again.
      ALTER TABLE store_state ADD COLUMN reload_from BIGINT NOT NULL DEFAULT 0;
    `,
  },
  {
    version: 7,
    name: 'change events',
    sql: `
      -- The event log's head (the last seq handed out) and the highest seq pruned. Every write takes its seqs
      -- from events_head in the update of store_state it already makes last, so seqs are handed out in commit order.
      ALTER TABLE store_state ADD COLUMN events_head BIGINT NOT NULL DEFAULT 0;
      ALTER TABLE store_state ADD COLUMN events_pruned BIGINT NOT NULL DEFAULT 0;

      -- One row per committed change of an entry; no index but the primary key (readers and pruning go by seq).
      CREATE TABLE inventory_events (
        seq               BIGINT      PRIMARY KEY,
        type              TEXT        NOT NULL CHECK (type IN ('inventory.created', 'inventory.updated', 'inventory.deleted')),
        occurred_at       TIMESTAMPTZ NOT NULL,
        pet_id            BIGINT      NOT NULL,
        status            TEXT        NOT NULL,
        previous_quantity INTEGER,
        quantity          INTEGER,
        version           BIGINT      NOT NULL,
        reason            TEXT,
        source            TEXT        NOT NULL CHECK (source IN ('api', 'cli')),
        key_id            TEXT,
        request_id        TEXT
      );
    `,
  },
  {
    version: 8,
    name: 'webhook endpoints and their delivery log',
    sql: `
      -- One row per endpoint: its secrets, where it stands in the event log, its retry state, and
      -- who delivers to it (lease_holder) until when (lease_until, on the database's clock: the
      -- instances' clocks may disagree, the server's is one).
      CREATE TABLE webhook_endpoints (
        id                    TEXT        PRIMARY KEY,
        url                   TEXT        NOT NULL,
        description           TEXT,
        secret                TEXT        NOT NULL,
        previous_secret       TEXT,
        previous_secret_until TIMESTAMPTZ,
        enabled               BOOLEAN     NOT NULL,
        disabled_reason       TEXT,
        created_at            TIMESTAMPTZ NOT NULL,
        delivered_seq         BIGINT      NOT NULL,
        failures              INTEGER     NOT NULL DEFAULT 0,
        next_attempt_at       TIMESTAMPTZ,
        last_failure_at       TIMESTAMPTZ,
        last_failure          TEXT,
        lease_holder          TEXT,
        lease_until           TIMESTAMPTZ,
        -- When the holder claimed it: a renewal keeps it, a new claim moves it on.
        lease_since           TIMESTAMPTZ
      );

      -- Every attempt, in the order made (id); read newest first per endpoint, pruned by age.
      CREATE TABLE webhook_deliveries (
        id            BIGSERIAL   PRIMARY KEY,
        endpoint_id   TEXT        NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
        event_id      TEXT        NOT NULL,
        seq           BIGINT      NOT NULL,
        attempted_at  TIMESTAMPTZ NOT NULL,
        status        INTEGER,
        error         TEXT,
        duration_ms   INTEGER     NOT NULL,
        response_body TEXT
      );
      CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, id);
      CREATE INDEX webhook_deliveries_attempted ON webhook_deliveries (attempted_at);
    `,
  },
  {
    version: 9,
    name: 'history reasons sold and damaged',
    // NOT VALID: every row holds one of the old reasons, which the new list keeps, so no scan under the table's lock (decisions 3.8).
    sql: `
      ALTER TABLE inventory_history DROP CONSTRAINT inventory_history_reason_check;
      ALTER TABLE inventory_history ADD CONSTRAINT inventory_history_reason_check
        CHECK (reason IN ('received', 'returned', 'correction', 'sold', 'damaged')) NOT VALID;
    `,
  },
  {
    version: 10,
    name: 'relays',
    sql: `
      -- Each relay of the event log to another system: the seq published so far, and its lease (on the server's clock).
      CREATE TABLE relays (
        name         TEXT        PRIMARY KEY,
        position     BIGINT      NOT NULL,
        lease_holder TEXT,
        lease_until  TIMESTAMPTZ
      );
    `,
  },
  {
    version: 11,
    name: 'webhook endpoints version',
    sql: `
      -- One row: bumped by every change of the endpoints a dispatcher must act on (endpoints-version.ts), so each instance sees it at its next read.
      CREATE TABLE webhook_state (
        id                INTEGER PRIMARY KEY CHECK (id = 1),
        endpoints_version BIGINT  NOT NULL
      );
      INSERT INTO webhook_state (id, endpoints_version) VALUES (1, 0);
    `,
  },
  {
    version: 12,
    name: 'webhook endpoints: requests in flight, the place above deliveredSeq',
    sql: `
      -- Endpoints made before this keep 1 (strict seq order, as they had); new ones get their own (decisions 10.13).
      ALTER TABLE webhook_endpoints ADD COLUMN max_in_flight INTEGER NOT NULL DEFAULT 1 CHECK (max_in_flight BETWEEN 1 AND 100);
      -- The seqs delivered above delivered_seq, as ranges ("12-15,18"), and the events waiting for a retry ("seq:failures:ms,...").
      ALTER TABLE webhook_endpoints ADD COLUMN delivered_above TEXT NOT NULL DEFAULT '';
      ALTER TABLE webhook_endpoints ADD COLUMN retrying TEXT NOT NULL DEFAULT '';
    `,
  },
  {
    version: 13,
    name: 'reservations',
    sql: `
      -- What active reservations hold of each entry, moved in the statement of every reservation's change of status.
      ALTER TABLE inventory ADD COLUMN reserved INTEGER NOT NULL DEFAULT 0 CHECK (reserved >= 0);

      -- place: the list's order and cursor; id: what the API names it by. Times on the server's clock, as leases are.
      CREATE TABLE reservations (
        place      BIGSERIAL   PRIMARY KEY,
        id         TEXT        NOT NULL UNIQUE,
        status     TEXT        NOT NULL CHECK (status IN ('active', 'committed', 'released', 'expired')),
        reference  TEXT,
        created_at TIMESTAMPTZ NOT NULL,
        expires_at TIMESTAMPTZ NOT NULL,
        ended_at   TIMESTAMPTZ,
        key_id     TEXT,
        request_id TEXT
      );
      -- The sweep's and every read's look for active reservations past their expiry: almost always an empty range.
      CREATE INDEX reservations_due ON reservations (status, expires_at);

      CREATE TABLE reservation_items (
        place    BIGINT  NOT NULL REFERENCES reservations (place),
        position INTEGER NOT NULL,
        pet_id   BIGINT  NOT NULL,
        quantity INTEGER NOT NULL CHECK (quantity BETWEEN 1 AND 2147483647),
        PRIMARY KEY (place, position)
      );
      CREATE INDEX reservation_items_pet ON reservation_items (pet_id, place);

      -- A reservation's event names no one entry: its pets, id, items, reference and expiry are in payload (decisions 12.6).
      ALTER TABLE inventory_events ALTER COLUMN pet_id DROP NOT NULL, ALTER COLUMN version DROP NOT NULL, ADD COLUMN payload TEXT;
      ALTER TABLE inventory_events DROP CONSTRAINT inventory_events_type_check;
      ALTER TABLE inventory_events ADD CONSTRAINT inventory_events_type_check CHECK (type IN ('inventory.created', 'inventory.updated',
        'inventory.deleted', 'reservation.created', 'reservation.committed', 'reservation.released', 'reservation.expired')) NOT VALID;
      -- A reservation that expires is the store's own change: no request, no operator.
      ALTER TABLE inventory_events DROP CONSTRAINT inventory_events_source_check;
      ALTER TABLE inventory_events ADD CONSTRAINT inventory_events_source_check CHECK (source IN ('api', 'cli', 'expiry')) NOT VALID;
    `,
  },
];

/** Applies the migrations not applied yet, in one transaction under an advisory lock: processes opening together migrate one at a time. */
export async function migrate(pool: StorePool, schema: string | undefined): Promise<void> {
  try {
    await migrateOnce(pool, schema);
  } catch (err) {
    // A process that waited for the lock while another created the schema may still be told by the server that it does not
    // exist: the transaction's first statement set search_path to it, and a name looked up before the wait can be answered
    // from that look-up. A new transaction sees it; once is enough, as the schema then exists.
    if ((err as { code?: unknown }).code !== UNIQUE_VIOLATION) throw err;
    await migrateOnce(pool, schema);
  }
}

const UNIQUE_VIOLATION = '23505';

async function migrateOnce(pool: StorePool, schema: string | undefined): Promise<void> {
  // A bulk transaction: an index over a large table, or the wait for another instance's migrations, may take longer than a request may.
  await inBulkTransaction(pool, {
    async run(query) {
      // Held until COMMIT, so processes opening together migrate one at a time; keyed by schema so separate schemas never wait for each other.
      await query("SELECT pg_advisory_xact_lock($1, hashtext(coalesce($2::text, current_schema(), '')))", [MIGRATION_LOCK_KEY, schema ?? null]);
      if (schema !== undefined) await query(`CREATE SCHEMA IF NOT EXISTS ${escapeIdentifier(schema)}`);
      await query('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL)');
      const { rows } = await query<{ version: number }>('SELECT version FROM schema_migrations');
      const applied = new Set(rows.map((r) => r.version));
      for (const m of MIGRATIONS) {
        if (applied.has(m.version)) continue;
        await query(m.sql);
        await query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, now())', [m.version, m.name]);
      }
    },
  });
}
