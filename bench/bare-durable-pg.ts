/**
 * The durable baseline on PostgreSQL: a bare node:http server whose PATCHes are as durable as the
 * service's and nothing else. One pg.Client; the changes that arrive while a batch is in flight
 * queue, and each batch is ONE statement in autocommit with synchronous_commit on, so one round
 * trip and one WAL flush per batch, each change answered after it. Each change bumps and stores its
 * entry's version, as the service's does (its ETag). No keys table, no idempotency, no change log,
 * no pool, no transaction preamble: the fair ceiling for a durable write on this machine, as the
 * service's figures are compared to it.
 *
 * Changes to the same pet within one batch apply in arrival order, inside the statement: a
 * recursive CTE steps through each pet's changes from the row's count (an adjustment that would go
 * below 0 is refused, 409, and the next change starts from the count before it), each accepted
 * one taking the next version, then the last accepted count and version are written once and every
 * accepted change gets its history row (and event, with its version).
 * The statement reads the rows it updates without locking them: this client is their only writer
 * (its own schema, one batch at a time).
 *
 * Creations of reservations (POST /v1/reservations of one item) are one statement per batch too,
 * writing the rows a creation writes in the service's store (store/postgres/reservation-group.ts):
 * each pet's holds judged in arrival order in the same way, each on what its pet has available (its
 * count less what is held, never below 0) after the holds before it; then for each accepted one its
 * reservation's row, its item's and its event reservation.created (with the reservation in its
 * payload), and each pet's hold written once. A batch holding both kinds (the bench's loads never
 * mix them) runs the two statements one after the other.
 *
 * Env: DATABASE_URL (the service's seeded database, read once for the pets), PORT, BENCH_KEY (the
 * one key it accepts), BARE_WRITES: what each change writes besides the entry (bare-durable.ts).
 * Its own tables live in a schema of its own, `bare`, in that database, made afresh at start.
 */
import pg from 'pg';
import { bareWrites, loadItems, serveBare, type BareChange, type BareResult } from './bare-durable.js';
import { BARE_KEY_ID, reservationAnswer, reservationPayload } from './bare-reservation.js';
import { requiredEnv } from './env.js';

const databaseUrl = requiredEnv('DATABASE_URL');
const writes = bareWrites();
const items = await loadItems(databaseUrl);

const client = new pg.Client({ connectionString: databaseUrl, application_name: 'bare-durable' });
await client.connect();
await client.query(`
  SET synchronous_commit = on;
  DROP SCHEMA IF EXISTS bare CASCADE;
  CREATE SCHEMA bare;
  CREATE TABLE bare.inventory (pet_id BIGINT PRIMARY KEY, quantity INTEGER NOT NULL, status TEXT NOT NULL, version BIGINT NOT NULL DEFAULT 1,
    reserved INTEGER NOT NULL DEFAULT 0);
  CREATE TABLE bare.history (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, pet_id BIGINT NOT NULL,
    previous_quantity INTEGER NOT NULL, quantity INTEGER NOT NULL, at TIMESTAMPTZ NOT NULL);
  CREATE TABLE bare.events (seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, type TEXT NOT NULL, occurred_at TIMESTAMPTZ NOT NULL,
    pet_id BIGINT, previous_quantity INTEGER, quantity INTEGER, version BIGINT, request_id TEXT NOT NULL, payload TEXT);
  -- Keyed and indexed as the service's (store/postgres/migrations.ts, reservations), so an insert writes the index entries the service's writes.
  CREATE TABLE bare.reservations (place BIGSERIAL PRIMARY KEY, id TEXT NOT NULL UNIQUE, status TEXT NOT NULL, reference TEXT,
    created_at TIMESTAMPTZ NOT NULL, expires_at TIMESTAMPTZ NOT NULL, ended_at TIMESTAMPTZ, key_id TEXT, request_id TEXT);
  CREATE INDEX ON bare.reservations (status, expires_at);
  CREATE TABLE bare.reservation_items (place BIGINT NOT NULL REFERENCES bare.reservations (place), position INTEGER NOT NULL,
    pet_id BIGINT NOT NULL, quantity INTEGER NOT NULL, PRIMARY KEY (place, position));
  CREATE INDEX ON bare.reservation_items (pet_id, place);
`);
await client.query('INSERT INTO bare.inventory (pet_id, quantity, status) SELECT * FROM unnest($1::bigint[], $2::int[], $3::text[])', [
  items.map((item) => item.petId),
  items.map((item) => item.quantity),
  items.map((item) => item.status),
]);
await client.query('VACUUM ANALYZE bare.inventory');

const historyInsert = `, history AS (
    INSERT INTO bare.history (pet_id, previous_quantity, quantity, at)
    SELECT pet_id, before, after, now() FROM steps WHERE ok ORDER BY ord)`;
const eventInsert = `, events AS (
    INSERT INTO bare.events (type, occurred_at, pet_id, previous_quantity, quantity, version, request_id)
    SELECT 'inventory.updated', now(), pet_id, before, after, version, request_id FROM steps WHERE ok ORDER BY ord)`;

/**
 * $1 pet ids, $2 quantities (null for an adjustment), $3 deltas (null for a PATCH), $4 request ids,
 * all in arrival order. One row per change, by its position: ok null for an unknown pet.
 */
const BATCH = `
  WITH RECURSIVE input AS (
    SELECT t.ord, t.pet_id, t.quantity, t.delta, t.request_id, row_number() OVER (PARTITION BY t.pet_id ORDER BY t.ord) AS k
    FROM unnest($1::bigint[], $2::int[], $3::int[], $4::text[]) WITH ORDINALITY AS t(pet_id, quantity, delta, request_id, ord)
  ), steps AS (
    SELECT i.ord, i.pet_id, i.k, i.request_id, inv.status, inv.quantity AS before,
      COALESCE(i.quantity, inv.quantity + i.delta) AS after, COALESCE(i.quantity, inv.quantity + i.delta) >= 0 AS ok,
      inv.version + (COALESCE(i.quantity, inv.quantity + i.delta) >= 0)::int AS version
    FROM input i JOIN bare.inventory inv ON inv.pet_id = i.pet_id
    WHERE i.k = 1
    UNION ALL
    SELECT i.ord, i.pet_id, i.k, i.request_id, p.status, b.before,
      COALESCE(i.quantity, b.before + i.delta), COALESCE(i.quantity, b.before + i.delta) >= 0,
      p.version + (COALESCE(i.quantity, b.before + i.delta) >= 0)::int
    FROM steps p
    JOIN input i ON i.pet_id = p.pet_id AND i.k = p.k + 1
    CROSS JOIN LATERAL (SELECT CASE WHEN p.ok THEN p.after ELSE p.before END AS before) b
  ), last_count AS (
    SELECT DISTINCT ON (pet_id) pet_id, CASE WHEN ok THEN after ELSE before END AS quantity, version
    FROM steps WHERE pet_id IN (SELECT pet_id FROM steps WHERE ok) ORDER BY pet_id, k DESC
  ), updated AS (
    UPDATE bare.inventory inv SET quantity = last_count.quantity, version = last_count.version FROM last_count WHERE inv.pet_id = last_count.pet_id
  )${writes === 'entry' ? '' : historyInsert}${writes === 'events' ? eventInsert : ''}
  SELECT s.ok, s.after, s.status FROM input i LEFT JOIN steps s ON s.ord = i.ord ORDER BY i.ord`;

interface Row {
  ok: boolean | null;
  after: number | null;
  status: string | null;
}

/**
 * $1 pet ids, $2 what each holds, $3 reservation ids, $4 request ids, $5 payloads of their events,
 * $6 created at, $7 expiring at, all in arrival order; $8 the key's id. One row per creation, by its
 * position: ok null for an unknown pet, false for too little available.
 */
const RESERVE = `
  WITH RECURSIVE input AS (
    SELECT t.*, row_number() OVER (PARTITION BY t.pet_id ORDER BY t.ord) AS k
    FROM unnest($1::bigint[], $2::int[], $3::text[], $4::text[], $5::text[], $6::timestamptz[], $7::timestamptz[])
      WITH ORDINALITY AS t(pet_id, quantity, id, request_id, payload, created_at, expires_at, ord)
  ), steps AS (
    SELECT i.ord, i.pet_id, i.k, inv.quantity AS stock, j.ok, inv.reserved + CASE WHEN j.ok THEN i.quantity ELSE 0 END AS held
    FROM input i JOIN bare.inventory inv ON inv.pet_id = i.pet_id
    CROSS JOIN LATERAL (SELECT greatest(inv.quantity - inv.reserved, 0) >= i.quantity AS ok) j
    WHERE i.k = 1
    UNION ALL
    SELECT i.ord, i.pet_id, i.k, p.stock, j.ok, p.held + CASE WHEN j.ok THEN i.quantity ELSE 0 END
    FROM steps p
    JOIN input i ON i.pet_id = p.pet_id AND i.k = p.k + 1
    CROSS JOIN LATERAL (SELECT greatest(p.stock - p.held, 0) >= i.quantity AS ok) j
  ), accepted AS (
    SELECT i.* FROM input i JOIN steps s ON s.ord = i.ord WHERE s.ok
  ), last_held AS (
    SELECT DISTINCT ON (pet_id) pet_id, held FROM steps WHERE pet_id IN (SELECT pet_id FROM accepted) ORDER BY pet_id, k DESC
  ), updated AS (
    UPDATE bare.inventory inv SET reserved = last_held.held FROM last_held WHERE inv.pet_id = last_held.pet_id
  ), made AS (
    INSERT INTO bare.reservations (id, status, reference, created_at, expires_at, key_id, request_id)
    SELECT id, 'active', NULL, created_at, expires_at, $8, request_id FROM accepted ORDER BY ord RETURNING place, id
  ), items AS (
    INSERT INTO bare.reservation_items (place, position, pet_id, quantity) SELECT made.place, 0, a.pet_id, a.quantity FROM made JOIN accepted a ON a.id = made.id
  ), events AS (
    INSERT INTO bare.events (type, occurred_at, request_id, payload)
    SELECT 'reservation.created', created_at, request_id, payload FROM accepted ORDER BY ord
  )
  SELECT s.ok FROM input i LEFT JOIN steps s ON s.ord = i.ord ORDER BY i.ord`;

/** The batch's changes of counts and its creations of reservations, each a statement of its own (the loads never mix them), answered in arrival order. */
async function commit(changes: BareChange[]): Promise<BareResult[]> {
  const results: BareResult[] = new Array<BareResult>(changes.length);
  const [holds, counts] = [changes.flatMap((c, i) => (c.hold ? [i] : [])), changes.flatMap((c, i) => (c.hold ? [] : [i]))];
  const place = (at: number[], answered: BareResult[]) => at.forEach((i, n) => (results[i] = answered[n]!));
  if (counts.length > 0) place(counts, await changeCounts(counts.map((i) => changes[i]!)));
  if (holds.length > 0) place(holds, await reserve(holds.map((i) => changes[i]!)));
  return results;
}

async function reserve(changes: BareChange[]): Promise<BareResult[]> {
  const now = Date.now();
  const expiries = changes.map((c) => now + c.hold!.ttlSeconds * 1000);
  const { rows } = await client.query<{ ok: boolean | null }>(RESERVE, [
    changes.map((c) => c.petId),
    changes.map((c) => c.hold!.quantity),
    changes.map((c) => c.hold!.id),
    changes.map((c) => c.requestId),
    changes.map((c, i) => reservationPayload(c.petId, c.hold!, expiries[i]!)),
    changes.map(() => new Date(now)),
    expiries.map((at) => new Date(at)),
    BARE_KEY_ID,
  ]);
  return changes.map((c, i) => {
    const { ok } = rows[i]!;
    if (ok === null) return 404;
    if (!ok) return 409;
    return reservationAnswer(c.petId, c.hold!, now, expiries[i]!);
  });
}

async function changeCounts(changes: BareChange[]): Promise<BareResult[]> {
  const { rows } = await client.query<Row>(BATCH, [
    changes.map((c) => c.petId),
    changes.map((c) => c.quantity ?? null),
    changes.map((c) => c.delta ?? null),
    changes.map((c) => c.requestId),
  ]);
  return changes.map((change, i) => {
    const row = rows[i]!;
    if (row.ok === null) return 404;
    if (!row.ok) return 409;
    return `{"petId":${change.petId},"quantity":${row.after},"status":"${row.status}"}`;
  });
}

serveBare({ items, commit, close: () => client.end() });
