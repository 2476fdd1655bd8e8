import type { QueryResult, QueryResultRow } from 'pg';
import { encodeOutcome, idempotencyKeyHash, judgeIdempotency, refusePastCap, type RecordsCap } from '../../domain/idempotency.js';
import { idempotencySlot, judgeChange, type ChangeOutcome, type ChangeResult, type QuantityChange } from '../../domain/inventory.js';
import type { PetStatus } from '../../schemas/inventory.js';
import type { FactsSql } from '../write-kinds-sql.js';
import { appendEvents, bumpStoreState, insertHistory } from './change-log.js';
import type { Statement } from './connection.js';

export type Query = <R extends QueryResultRow>(statement: Statement, values: unknown[]) => Promise<QueryResult<R>>;

/** Where a batch runs: `query` on its own (one statement, its own transaction), or a transaction of several statements. */
export interface Database {
  query: Query;
  transaction<T>(fn: (query: Query) => Promise<T>): Promise<T>;
  /** The NOTIFY channel of the store's event log (events.ts). */
  channel: string;
  /** Append no events (the store's omitChangeEvents: only for the bench to measure what the log costs). */
  omitEvents?: boolean;
}

/** An applied change (a row of ok) as the facts of its write. */
const APPLIED: FactsSql = {
  at: 'ok.at',
  petId: 'ok.pet_id',
  status: 'ok.status',
  before: 'ok.previous',
  after: 'ok.quantity',
  version: 'ok.new_version',
  reason: 'ok.reason',
  source: 'ok.source',
  keyId: 'ok.key_id',
  requestId: 'ok.request_id',
};

/**
 * Applies a batch of changes (each pet at most once) in one statement, so one round trip and
 * one commit. Rows are locked in petId order, and store_state only once all of them are: bump's
 * count(*) reads cur to the end (EXISTS alone could stop at its first row). So, as in every other
 * write, store_state is the last lock taken (change-log.ts), and batches of several instances
 * cannot deadlock. Every change gets one result row, in the order given: cur is the entry before
 * the change (absent: no entry, or a retired one), newVersion is set when it was applied.
 *
 * Each applied change writes its history row (hist) and appends its event (ev), kind updated of
 * the domain table, with a seq taken from store_state.events_head in the same update that bumps
 * the store version, and the NOTIFY ($11) with it (change-log.ts), so only when something was applied.
 *
 * A change sets its quantity ($2), or moves the count it finds in its locked row by a delta ($9,
 * null for a set), in bigint so that no sum overflows before it is judged. ok mirrors domain
 * judgeChange: the If-Match condition, then the count within 0..2147483647, and a negative delta
 * not below what reservations hold (reserved, in the same locked row: decisions 12.3); a change it leaves out
 * is classified by judgeChange itself, on the row it found (applyChanges), so the rule lives once.
 * $10 is each change's source (api or cli), which its event carries.
 */
export const CHANGE_BATCH = changeBatch(true);

/**
 * CHANGE_BATCH as it was before the event log: no event, no events head, no NOTIFY (and no $11).
 * Only for a store opened with omitChangeEvents, which the bench alone does to measure the log's cost.
 */
export const CHANGE_BATCH_WITHOUT_EVENTS = changeBatch(false);

/** The text of CHANGE_BATCH, with the event log's parts or without them; built once per variant. */
function changeBatch(withEvents: boolean): Statement {
  const bump = bumpStoreState(withEvents ? { count: '(SELECT count(*) FROM ok)', notify: '$11' } : undefined, {
    when: '(SELECT count(*) FROM cur) > 0 AND EXISTS (SELECT 1 FROM ok)',
  });
  const ev = withEvents
    ? `
         ev AS (${appendEvents('bump.events_head - (SELECT count(*) FROM ok) + row_number() OVER (ORDER BY ok.ord)', 'updated', APPLIED, 'ok, bump')}),`
    : '';
  return {
    name: withEvents ? 'inventory-change-batch' : 'inventory-change-batch-without-events',
    text: `WITH c AS (SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::timestamptz[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::bigint[], $10::text[])
                    WITH ORDINALITY AS c(pet_id, quantity, at, key_id, key_name, request_id, reason, versions, delta, source, ord)),
         cur AS (SELECT pet_id, quantity, status, version, reserved FROM inventory WHERE pet_id = ANY($1::bigint[]) AND retired_at IS NULL
                 ORDER BY pet_id FOR UPDATE),
         n AS (SELECT c.pet_id, c.at, c.key_id, c.key_name, c.request_id, c.reason, c.versions, c.source, c.ord, cur.quantity AS previous, cur.status, cur.version,
                      CASE WHEN c.delta IS NULL THEN c.quantity ELSE cur.quantity::bigint + c.delta END AS quantity, c.delta < 0 AS sale, cur.reserved
               FROM c JOIN cur ON cur.pet_id = c.pet_id),
         ok AS (SELECT n.*, n.version + 1 AS new_version FROM n
                WHERE (n.versions IS NULL OR n.version = ANY(n.versions::bigint[])) AND n.quantity BETWEEN 0 AND 2147483647
                  AND (n.sale IS NOT TRUE OR n.quantity >= n.reserved)),
         hist AS (${insertHistory('SELECT pet_id, previous, quantity, at, key_id, key_name, request_id, reason FROM ok ORDER BY ord')}),
         bump AS (${bump}),${ev}
         upd AS (UPDATE inventory i SET quantity = ok.quantity, version = i.version + 1, change_seq = bump.version, updated_at = ok.at
                 FROM ok, bump WHERE i.pet_id = ok.pet_id RETURNING i.pet_id, i.version, i.quantity)
    SELECT cur.pet_id AS "petId", cur.quantity, cur.status, cur.version, cur.reserved, upd.version AS "newVersion", upd.quantity AS "newQuantity"
    FROM c LEFT JOIN cur ON cur.pet_id = c.pet_id LEFT JOIN upd ON upd.pet_id = c.pet_id ORDER BY c.ord`,
  };
}

/**
 * Locks the idempotency counts of the batch's API keys, in key order (so batches of several
 * instances lock in one order and never wait for each other in a circle), creating the missing
 * ones at 0, and reads them. Every transaction that writes an API key's records locks its count
 * first, so until this one commits no other reads or writes them: the records FIND_KEYS finds
 * and the count stay true, and the cap is exact across instances. (Keyed batches already take
 * turns at store_state; this makes them take turns a little earlier.)
 */
export const LOCK_COUNTS = {
  name: 'idempotency-lock-counts',
  text: `INSERT INTO idempotency_counts AS c (api_key_id, records) SELECT k, 0 FROM unnest($1::text[]) AS k ORDER BY k
         ON CONFLICT (api_key_id) DO UPDATE SET records = c.records RETURNING api_key_id AS "keyId", records`,
} as const satisfies Statement;

/** The records the batch's keys already have, expired or not. */
export const FIND_KEYS = {
  name: 'idempotency-find-batch',
  text: `SELECT r.api_key_id AS "keyId", r.key_hash AS "keyHash", r.fingerprint, r.outcome, r.expires_at <= t.a AS expired
         FROM idempotency_records r JOIN unnest($1::text[], $2::text[], $3::timestamptz[]) AS t(k, h, a) ON r.api_key_id = t.k AND r.key_hash = t.h`,
} as const satisfies Statement;

/** Deletes up to $4 expired records of one API key, oldest first, but not those the batch reuses ($3). */
export const RECLAIM_EXPIRED = {
  name: 'idempotency-reclaim',
  text: `DELETE FROM idempotency_records WHERE api_key_id = $1 AND key_hash IN
           (SELECT key_hash FROM idempotency_records WHERE api_key_id = $1 AND expires_at <= $2 AND key_hash <> ALL($3::text[])
            ORDER BY expires_at LIMIT $4)`,
} as const satisfies Statement;

/** When an API key's oldest live record expires: the Retry-After of a refusal. */
export const OLDEST_LIVE = {
  name: 'idempotency-oldest-live',
  text: 'SELECT min(expires_at) AS oldest FROM idempotency_records WHERE api_key_id = $1 AND expires_at > $2',
} as const satisfies Statement;

/** Stores each applied change's outcome under its key's hash (an expired record is replaced). */
export const SAVE_OUTCOMES = {
  name: 'idempotency-save-batch',
  text: `INSERT INTO idempotency_records (api_key_id, key_hash, fingerprint, outcome, created_at, expires_at)
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[], $6::timestamptz[])
         ON CONFLICT (api_key_id, key_hash) DO UPDATE SET fingerprint = excluded.fingerprint, outcome = excluded.outcome,
           created_at = excluded.created_at, expires_at = excluded.expires_at`,
} as const satisfies Statement;

interface ResultRow {
  petId: bigint | null;
  quantity: number;
  status: PetStatus;
  reserved: number | null;
  version: bigint | null;
  newVersion: bigint | null;
  newQuantity: number | null;
}

/** An idempotency record as FIND_KEYS reads it. */
export interface RecordRow {
  keyId: string;
  keyHash: string;
  fingerprint: string;
  outcome: string | null;
  expired: boolean;
}

type Keyed = QuantityChange & { idempotency: NonNullable<QuantityChange['idempotency']> };
type Applied = ChangeOutcome & { replayed: false };

/**
 * One batch (each pet, and each idempotency key, at most once): changes without an idempotency
 * key in one statement; with any, one transaction that locks the API keys' counts, replays or
 * refuses the keys already used, refuses new keys past the cap, applies the rest in the same one
 * statement and stores their outcomes.
 */
export async function applyBatch(db: Database, changes: readonly QuantityChange[]): Promise<ChangeResult[]> {
  const keyed = changes.filter((c): c is Keyed => c.idempotency !== undefined);
  if (keyed.length === 0) return applyChanges(db.query, changes, db);
  const hashOf = new Map(keyed.map((c) => [c, idempotencyKeyHash(c.idempotency.key)]));
  return db.transaction(async (query) => {
    const apiKeys = [...new Set(keyed.map((c) => c.keyId))].sort();
    const held = new Map((await query<{ keyId: string; records: number }>(LOCK_COUNTS, [apiKeys])).rows.map((r) => [r.keyId, r.records]));
    const { rows } = await query<RecordRow>(FIND_KEYS, [keyed.map((c) => c.keyId), keyed.map((c) => hashOf.get(c)), keyed.map((c) => c.at.toISOString())]);
    const found = new Map(rows.map((r) => [idempotencySlot(r.keyId, r.keyHash), r]));
    const recordOf = (c: Keyed) => found.get(idempotencySlot(c.keyId, hashOf.get(c)!));

    const earlier = new Map<QuantityChange, ChangeResult>();
    const verdicts = new Map(keyed.map((c) => [c, judgeIdempotency(recordOf(c), c.idempotency.fingerprint)]));
    for (const [c, verdict] of verdicts) if (verdict.kind === 'answer') earlier.set(c, verdict.result);
    for (const keyId of apiKeys) {
      const ofKey = keyed.filter((c) => c.keyId === keyId);
      // Only a key without any record takes a new row; a record that exists is written over in place.
      const fresh = ofKey.filter((c) => verdicts.get(c)!.kind === 'new');
      const reused = ofKey.filter((c) => recordOf(c)).map((c) => hashOf.get(c)!);
      const first = fresh[0];
      if (!first) continue;
      const cap = recordsCap(query, keyId, held.get(keyId) ?? 0, first.at, reused);
      const past = await refusePastCap(cap, fresh.length, first.idempotency.recordsPerKey, first.at);
      // The last new keys are the ones refused.
      for (const c of past ? fresh.slice(Math.max(0, fresh.length - past.refused)) : []) earlier.set(c, past!.result);
    }

    const toApply = changes.filter((c) => !earlier.has(c));
    const applied = toApply.length > 0 ? await applyChanges(query, toApply, db) : [];
    const outcomes = new Map(toApply.map((c, i) => [c, applied[i]!]));
    const toSave = keyed.filter((c) => outcomes.has(c));
    if (toSave.length > 0) await query(SAVE_OUTCOMES, saveValues(toSave, (c) => hashOf.get(c)!, (c) => outcomes.get(c)!));
    return changes.map((c) => earlier.get(c) ?? outcomes.get(c)!);
  });
}

/**
 * An API key's records as domain refusePastCap asks for them, at `now`, in the transaction that
 * locked its count (LOCK_COUNTS read `held`): the expired ones it may delete are not those the
 * write reuses (`reused`, their hashes), which it writes over in place.
 */
export function recordsCap(query: Query, keyId: string, held: number, now: Date, reused: readonly string[]): RecordsCap<true> {
  const at = now.toISOString();
  return {
    held: async () => held,
    reclaimExpired: async (count) => (await query(RECLAIM_EXPIRED, [keyId, at, reused, count])).rowCount ?? 0,
    oldestLive: async () => (await query<{ oldest: Date | null }>(OLDEST_LIVE, [keyId, at])).rows[0]?.oldest ?? undefined,
  };
}

function saveValues(keyed: readonly Keyed[], hashOf: (c: Keyed) => string, outcomeOf: (c: Keyed) => Applied): unknown[] {
  return [
    keyed.map((c) => c.keyId),
    keyed.map(hashOf),
    keyed.map((c) => c.idempotency.fingerprint),
    keyed.map((c) => encodeOutcome(outcomeOf(c))),
    keyed.map((c) => c.at.toISOString()),
    keyed.map((c) => c.idempotency.expiresAt.toISOString()),
  ];
}

/** CHANGE_BATCH for these changes, one result each, in order; a change it did not apply judged by domain judgeChange on the row it found. */
export async function applyChanges(query: Query, changes: readonly QuantityChange[], db: Pick<Database, 'channel' | 'omitEvents'>): Promise<Applied[]> {
  const versions = (c: QuantityChange) => (c.condition && !c.condition.anyVersion ? `{${c.condition.versions.join(',')}}` : null);
  const { rows } = await query<ResultRow>(db.omitEvents ? CHANGE_BATCH_WITHOUT_EVENTS : CHANGE_BATCH, [
    changes.map((c) => c.petId.toString()),
    changes.map((c) => c.quantity ?? null),
    changes.map((c) => c.at.toISOString()),
    changes.map((c) => c.keyId),
    changes.map((c) => c.keyName),
    changes.map((c) => c.requestId),
    changes.map((c) => c.reason),
    changes.map(versions),
    changes.map((c) => c.delta ?? null),
    changes.map((c) => c.source),
    ...(db.omitEvents ? [] : [db.channel]),
  ]);
  return changes.map((change, i): Applied => {
    const { petId, quantity, status, reserved, version, newVersion, newQuantity } = rows[i]!;
    const item = reserved ? { petId: petId!, quantity, status, reserved } : { petId: petId!, quantity, status };
    const current = petId === null || version === null ? undefined : { item, version: Number(version) };
    if (current && newVersion !== null && newQuantity !== null) {
      return { kind: 'updated', entry: { item: { ...current.item, quantity: newQuantity }, version: Number(newVersion) }, replayed: false };
    }
    const verdict = judgeChange(current, change);
    if (verdict.kind === 'apply') throw new Error(`CHANGE_BATCH left out the change of pet ${change.petId}, which judgeChange applies`);
    return { ...verdict, replayed: false };
  });
}
