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
 * Env: DATABASE_URL (the service's seeded database, read once for the pets), PORT, BENCH_KEY (the
 * one key it accepts), BARE_WRITES: what each change writes besides the entry (bare-durable.ts).
 * Its own tables live in a schema of its own, `bare`, in that database, made afresh at start.
 */
import pg from 'pg';
import { bareWrites, loadItems, serveBare, type BareChange, type BareResult } from './bare-durable.js';
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
  CREATE TABLE bare.inventory (pet_id BIGINT PRIMARY KEY, quantity INTEGER NOT NULL, status TEXT NOT NULL, version BIGINT NOT NULL DEFAULT 1);
  CREATE TABLE bare.history (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, pet_id BIGINT NOT NULL,
    previous_quantity INTEGER NOT NULL, quantity INTEGER NOT NULL, at TIMESTAMPTZ NOT NULL);
  CREATE TABLE bare.events (seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, type TEXT NOT NULL, occurred_at TIMESTAMPTZ NOT NULL,
    pet_id BIGINT NOT NULL, previous_quantity INTEGER NOT NULL, quantity INTEGER NOT NULL, version BIGINT NOT NULL, request_id TEXT NOT NULL);
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

async function commit(changes: BareChange[]): Promise<BareResult[]> {
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
