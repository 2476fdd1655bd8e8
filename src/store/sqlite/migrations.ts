import type Database from 'better-sqlite3';
import { idempotencyKeyHash } from '../../domain/idempotency.js';

/** A schema version; `functions` are what its SQL calls that SQLite lacks, registered on the connection first. */
export interface Migration {
  version: number;
  name: string;
  sql: string;
  functions?: Record<string, (value: string) => string>;
}

/**
 * SQLite schema versions, applied in order at start; an applied version is never edited,
 * a change is a new version.
 */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'inventory and api keys',
    sql: `
      CREATE TABLE inventory (
        pet_id     INTEGER PRIMARY KEY,
        quantity   INTEGER NOT NULL CHECK (quantity BETWEEN 0 AND 2147483647),
        status     TEXT    NOT NULL CHECK (status IN ('available', 'pending', 'sold')),
        created_at TEXT    NOT NULL,
        updated_at TEXT    NOT NULL
      ) STRICT;

      CREATE TABLE api_keys (
        id           TEXT PRIMARY KEY,
        name         TEXT NOT NULL,
        environment  TEXT NOT NULL CHECK (environment IN ('production', 'staging')),
        key_hash     TEXT NOT NULL UNIQUE,
        hint         TEXT NOT NULL,
        scopes       TEXT NOT NULL,
        created_at   TEXT NOT NULL,
        last_used_at TEXT,
        expires_at   TEXT,
        revoked_at   TEXT
      ) STRICT;
    `,
  },
  {
    version: 2,
    name: 'entry versions, change history, idempotency records, store change counter',
    sql: `
      -- version: per entry, +1 on every change (ETag). change_seq: the store version that last changed it.
      ALTER TABLE inventory ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
      ALTER TABLE inventory ADD COLUMN change_seq INTEGER NOT NULL DEFAULT 0;
      CREATE INDEX inventory_change_seq ON inventory (change_seq);

      -- One row: bumped by every committed change, so readers can tell cheaply whether anything changed.
      CREATE TABLE store_state (
        id      INTEGER PRIMARY KEY CHECK (id = 1),
        version INTEGER NOT NULL
      ) STRICT;
      INSERT INTO store_state (id, version) VALUES (1, 0);

      CREATE TABLE inventory_history (
        id                INTEGER PRIMARY KEY, -- no AUTOINCREMENT: rows are never deleted, so ids never repeat
        pet_id            INTEGER NOT NULL,
        previous_quantity INTEGER NOT NULL,
        quantity          INTEGER NOT NULL,
        at                TEXT    NOT NULL,
        key_id            TEXT    NOT NULL,
        key_name          TEXT    NOT NULL,
        request_id        TEXT    NOT NULL,
        reason            TEXT    CHECK (reason IN ('received', 'returned', 'correction'))
      ) STRICT;
      CREATE INDEX inventory_history_pet ON inventory_history (pet_id, id);

      -- The first outcome of a PATCH per API key and Idempotency-Key; outcome is NULL while it runs.
      CREATE TABLE idempotency_records (
        api_key_id  TEXT NOT NULL,
        idem_key    TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        outcome     TEXT,
        created_at  TEXT NOT NULL,
        expires_at  TEXT NOT NULL,
        PRIMARY KEY (api_key_id, idem_key)
      ) STRICT;
      CREATE INDEX idempotency_records_expiry ON idempotency_records (expires_at);
    `,
  },
  {
    version: 3,
    name: 'history chained per pet, and a change log instead of the change_seq index',
    // Fewer pages written per change: an update no longer moves an index entry (change_seq), nor
    // does a history row insert into one (pet_id, id); each pet's rows link to the previous one.
    sql: `
      -- The reason CHECK as ORs: an IN list builds a throwaway table on every insert.
      CREATE TABLE inventory_history_chained (
        id                INTEGER PRIMARY KEY,
        pet_id            INTEGER NOT NULL,
        previous_quantity INTEGER NOT NULL,
        quantity          INTEGER NOT NULL,
        at                TEXT    NOT NULL,
        key_id            TEXT    NOT NULL,
        key_name          TEXT    NOT NULL,
        request_id        TEXT    NOT NULL,
        reason            TEXT    CHECK (reason IS NULL OR reason = 'received' OR reason = 'returned' OR reason = 'correction'),
        prev_id           INTEGER -- the same pet's previous history row; NULL for its first
      ) STRICT;
      -- Both links are read through the old (pet_id, id) index, so before the old table goes.
      INSERT INTO inventory_history_chained
        SELECT h.id, h.pet_id, h.previous_quantity, h.quantity, h.at, h.key_id, h.key_name, h.request_id, h.reason,
               (SELECT max(p.id) FROM inventory_history p WHERE p.pet_id = h.pet_id AND p.id < h.id)
        FROM inventory_history h;
      ALTER TABLE inventory ADD COLUMN last_history_id INTEGER; -- the pet's newest history row
      UPDATE inventory SET last_history_id = (SELECT max(h.id) FROM inventory_history h WHERE h.pet_id = inventory.pet_id);
      DROP TABLE inventory_history;
      ALTER TABLE inventory_history_chained RENAME TO inventory_history;

      -- One row per committed write of entries: the store version it made and the pets it wrote,
      -- as a JSON array of their ids, or '*' for a bulk creation (readers then reload the list).
      CREATE TABLE inventory_changes (seq INTEGER PRIMARY KEY, pet_ids TEXT NOT NULL) STRICT;
      INSERT INTO inventory_changes (seq, pet_ids) SELECT version, '*' FROM store_state WHERE version > 0;
      DROP INDEX inventory_change_seq;
      ALTER TABLE inventory DROP COLUMN change_seq;
    `,
  },
  {
    version: 4,
    name: 'idempotency keys kept as their SHA-256, and counted per API key',
    // A key is whatever a client sends: only its hash is kept. The records already kept are
    // hashed here, so a retry sent across the upgrade is still replayed.
    functions: { idempotency_key_hash: idempotencyKeyHash },
    sql: `
      CREATE TABLE idempotency_records_hashed (
        api_key_id  TEXT NOT NULL,
        key_hash    TEXT NOT NULL, -- hex SHA-256 of the Idempotency-Key
        fingerprint TEXT NOT NULL,
        outcome     TEXT,
        created_at  TEXT NOT NULL,
        expires_at  TEXT NOT NULL,
        PRIMARY KEY (api_key_id, key_hash)
      ) STRICT;
      INSERT INTO idempotency_records_hashed
        SELECT api_key_id, idempotency_key_hash(idem_key), fingerprint, outcome, created_at, expires_at FROM idempotency_records;
      DROP TABLE idempotency_records;
      ALTER TABLE idempotency_records_hashed RENAME TO idempotency_records;
      -- One API key's records by expiry: its oldest live one (Retry-After) and its expired ones (purge), without a scan.
      CREATE INDEX idempotency_records_key_expiry ON idempotency_records (api_key_id, expires_at);

      -- How many records (live or expired) each API key holds, kept by the triggers: the cap is checked without counting rows.
      CREATE TABLE idempotency_counts (api_key_id TEXT PRIMARY KEY, records INTEGER NOT NULL) STRICT;
      INSERT INTO idempotency_counts (api_key_id, records) SELECT api_key_id, count(*) FROM idempotency_records GROUP BY api_key_id;
      -- An upsert that updates a record fires neither: the count is of rows.
      CREATE TRIGGER idempotency_record_added AFTER INSERT ON idempotency_records BEGIN
        INSERT INTO idempotency_counts (api_key_id, records) VALUES (NEW.api_key_id, 1)
          ON CONFLICT (api_key_id) DO UPDATE SET records = records + 1;
      END;
      CREATE TRIGGER idempotency_record_removed AFTER DELETE ON idempotency_records BEGIN
        UPDATE idempotency_counts SET records = records - 1 WHERE api_key_id = OLD.api_key_id;
      END;
    `,
  },
  {
    version: 5,
    name: 'retired entries',
    sql: `
      -- When the entry was retired (pets remove); NULL while the store stocks it. The row stays, so its history does.
      ALTER TABLE inventory ADD COLUMN retired_at TEXT;
    `,
  },
  {
    version: 6,
    name: 'change events',
    sql: `
      -- The event log's head (the last seq handed out) and the highest seq pruned, moved with the store version.
      ALTER TABLE store_state ADD COLUMN events_head INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE store_state ADD COLUMN events_pruned INTEGER NOT NULL DEFAULT 0;

      -- One row per committed change of an entry. seq is the rowid, given explicitly from events_head:
      -- no index besides the table itself, and a pruned seq is never handed out again. CHECKs as ORs (see history).
      CREATE TABLE inventory_events (
        seq               INTEGER PRIMARY KEY,
        type              TEXT    NOT NULL CHECK (type = 'inventory.created' OR type = 'inventory.updated' OR type = 'inventory.deleted'),
        occurred_at       TEXT    NOT NULL,
        pet_id            INTEGER NOT NULL,
        status            TEXT    NOT NULL,
        previous_quantity INTEGER,
        quantity          INTEGER,
        version           INTEGER NOT NULL,
        reason            TEXT,
        source            TEXT    NOT NULL CHECK (source = 'api' OR source = 'cli'),
        key_id            TEXT,
        request_id        TEXT
      ) STRICT;
    `,
  },
  {
    version: 7,
    name: 'webhook endpoints and their delivery log',
    sql: `
      -- One row per endpoint: its secrets, where it stands in the event log, its retry state, and
      -- who delivers to it (lease_holder) until when (lease_until: Unix ms, Date.now()'s clock:
      -- every process sharing the file runs on this machine).
      CREATE TABLE webhook_endpoints (
        id                    TEXT    PRIMARY KEY,
        url                   TEXT    NOT NULL,
        description           TEXT,
        secret                TEXT    NOT NULL,
        previous_secret       TEXT,
        previous_secret_until TEXT,
        enabled               INTEGER NOT NULL CHECK (enabled = 0 OR enabled = 1),
        disabled_reason       TEXT,
        created_at            TEXT    NOT NULL,
        delivered_seq         INTEGER NOT NULL,
        failures              INTEGER NOT NULL DEFAULT 0,
        next_attempt_at       TEXT,
        last_failure_at       TEXT,
        last_failure          TEXT,
        lease_holder          TEXT,
        lease_until           INTEGER,
        -- When the holder claimed it (Unix ms): a renewal keeps it, a new claim moves it on.
        lease_since           INTEGER
      ) STRICT;

      -- Every attempt, in the order made (id); read newest first per endpoint, pruned by age.
      CREATE TABLE webhook_deliveries (
        id            INTEGER PRIMARY KEY,
        endpoint_id   TEXT    NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
        event_id      TEXT    NOT NULL,
        seq           INTEGER NOT NULL,
        attempted_at  TEXT    NOT NULL,
        status        INTEGER,
        error         TEXT,
        duration_ms   INTEGER NOT NULL,
        response_body TEXT
      ) STRICT;
      CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, id);
      CREATE INDEX webhook_deliveries_attempted ON webhook_deliveries (attempted_at);
    `,
  },
  {
    version: 8,
    name: 'history reasons sold and damaged',
    // SQLite cannot alter a CHECK: the table is rebuilt, rows and ids as they were (decisions 3.8).
    sql: `
      CREATE TABLE inventory_history_reasons (
        id                INTEGER PRIMARY KEY,
        pet_id            INTEGER NOT NULL,
        previous_quantity INTEGER NOT NULL,
        quantity          INTEGER NOT NULL,
        at                TEXT    NOT NULL,
        key_id            TEXT    NOT NULL,
        key_name          TEXT    NOT NULL,
        request_id        TEXT    NOT NULL,
        reason            TEXT    CHECK (reason IS NULL OR reason = 'received' OR reason = 'returned' OR reason = 'correction'
                                         OR reason = 'sold' OR reason = 'damaged'),
        prev_id           INTEGER -- the same pet's previous history row; NULL for its first
      ) STRICT;
      INSERT INTO inventory_history_reasons SELECT * FROM inventory_history;
      DROP TABLE inventory_history;
      ALTER TABLE inventory_history_reasons RENAME TO inventory_history;
    `,
  },
  {
    version: 9,
    name: 'relays',
    sql: `
      -- Each relay of the event log to another system: the seq published so far, and its lease.
      CREATE TABLE relays (
        name         TEXT    PRIMARY KEY,
        position     INTEGER NOT NULL,
        lease_holder TEXT,
        -- Unix ms, on Date.now(): every process on the file runs on this one machine.
        lease_until  INTEGER
      ) STRICT;
    `,
  },
  {
    version: 10,
    name: 'webhook endpoints version',
    sql: `
      -- One row: bumped by every change of the endpoints a dispatcher must act on (endpoints-version.ts), so each instance sees it at its next read.
      CREATE TABLE webhook_state (
        id                INTEGER PRIMARY KEY CHECK (id = 1),
        endpoints_version INTEGER NOT NULL
      ) STRICT;
      INSERT INTO webhook_state (id, endpoints_version) VALUES (1, 0);
    `,
  },
  {
    version: 11,
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
    version: 12,
    name: 'reservations',
    // The event log is rebuilt: SQLite cannot alter a CHECK, and a reservation's event names no one entry (decisions 12.6).
    sql: `
      -- What active reservations hold of each entry, moved in the transaction of every reservation's change of status.
      ALTER TABLE inventory ADD COLUMN reserved INTEGER NOT NULL DEFAULT 0 CHECK (reserved >= 0);

      -- place: the list's order and cursor; id: what the API names it by. Times as Unix ms (Date.now()'s clock: every
      -- process sharing the file runs on this machine), so expiry is an integer comparison on the (status, expires_at) index.
      CREATE TABLE reservations (
        place      INTEGER PRIMARY KEY,
        id         TEXT    NOT NULL UNIQUE,
        status     TEXT    NOT NULL CHECK (status = 'active' OR status = 'committed' OR status = 'released' OR status = 'expired'),
        reference  TEXT,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        ended_at   INTEGER,
        key_id     TEXT,
        request_id TEXT
      ) STRICT;
      -- The sweep's and every read's look for active reservations past their expiry: almost always an empty range.
      CREATE INDEX reservations_due ON reservations (status, expires_at);

      CREATE TABLE reservation_items (
        place    INTEGER NOT NULL REFERENCES reservations (place),
        position INTEGER NOT NULL,
        pet_id   INTEGER NOT NULL,
        quantity INTEGER NOT NULL CHECK (quantity BETWEEN 1 AND 2147483647),
        PRIMARY KEY (place, position)
      ) STRICT;
      CREATE INDEX reservation_items_pet ON reservation_items (pet_id, place);

      -- SQLite cannot change a CHECK in place: the log is rebuilt under another name, copied, and renamed back.
      -- Only change-log.ts appends to the log; this copy moves rows, it records nothing.
      CREATE TABLE events_rebuilt (
        seq               INTEGER PRIMARY KEY,
        type              TEXT    NOT NULL CHECK (type = 'inventory.created' OR type = 'inventory.updated' OR type = 'inventory.deleted'
                                                  OR type = 'reservation.created' OR type = 'reservation.committed'
                                                  OR type = 'reservation.released' OR type = 'reservation.expired'),
        occurred_at       TEXT    NOT NULL,
        pet_id            INTEGER, -- NULL for a reservation's event, which names its pets in payload
        status            TEXT    NOT NULL,
        previous_quantity INTEGER,
        quantity          INTEGER,
        version           INTEGER,
        reason            TEXT,
        source            TEXT    NOT NULL CHECK (source = 'api' OR source = 'cli' OR source = 'expiry'),
        key_id            TEXT,
        request_id        TEXT,
        payload           TEXT     -- a reservation's event: its id, items, reference and expiry (domain reservationPayload)
      ) STRICT;
      INSERT INTO events_rebuilt
        SELECT seq, type, occurred_at, pet_id, status, previous_quantity, quantity, version, reason, source, key_id, request_id, NULL
        FROM inventory_events;
      DROP TABLE inventory_events;
      ALTER TABLE events_rebuilt RENAME TO inventory_events;
    `,
  },
];

/** Applies the migrations not applied yet, in one IMMEDIATE transaction: processes starting together migrate one at a time. */
export function migrate(db: Database.Database): void {
  db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL) STRICT');
  db.transaction(() => {
    const applied = new Set(db.prepare('SELECT version FROM schema_migrations').pluck().all() as number[]);
    const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
    for (const m of MIGRATIONS) {
      if (applied.has(m.version)) continue;
      for (const [name, fn] of Object.entries(m.functions ?? {})) db.function(name, { deterministic: true }, fn);
      db.exec(m.sql);
      record.run(m.version, m.name, new Date().toISOString());
    }
  }).immediate();
}
