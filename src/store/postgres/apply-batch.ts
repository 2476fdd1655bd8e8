import type { QueryResult, QueryResultRow } from 'pg';
import { idempotencySlot, type ChangeOutcome, type ChangeResult, type QuantityChange } from '../../domain/inventory.js';
import type { PetStatus } from '../../schemas/inventory.js';
import { decodeOutcome, encodeOutcome } from '../outcome.js';

/** A named statement: each connection prepares it once. */
export interface Statement {
  name: string;
  text: string;
}

export type Query = <R extends QueryResultRow>(statement: Statement, values: unknown[]) => Promise<QueryResult<R>>;

/** Where a batch runs: `query` on its own (one statement, its own transaction), or a transaction of several statements. */
export interface Database {
  query: Query;
  transaction<T>(fn: (query: Query) => Promise<T>): Promise<T>;
}

/**
 * Applies a batch of changes (each pet at most once) in one statement, so one round trip and
 * one commit. Rows are locked in petId order, and store_state only once all of them are: bump's
 * count(*) reads cur to the end (EXISTS alone could stop at its first row). So, as in every other
 * write, store_state is the last lock taken, and batches of several instances cannot deadlock.
 * Every change gets one result row, in the order given: cur is the entry before the change
 * (absent: no entry), newVersion is set when it was applied.
 */
export const CHANGE_BATCH = {
  name: 'inventory-change-batch',
  text: `WITH c AS (SELECT * FROM unnest($1::bigint[], $2::integer[], $3::timestamptz[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[])
                    WITH ORDINALITY AS c(pet_id, quantity, at, key_id, key_name, request_id, reason, versions, ord)),
         cur AS (SELECT pet_id, quantity, status, version FROM inventory WHERE pet_id = ANY($1::bigint[]) ORDER BY pet_id FOR UPDATE),
         ok AS (SELECT c.*, cur.quantity AS previous FROM c JOIN cur ON cur.pet_id = c.pet_id
                WHERE c.versions IS NULL OR cur.version = ANY(c.versions::bigint[])),
         hist AS (INSERT INTO inventory_history (pet_id, previous_quantity, quantity, at, key_id, key_name, request_id, reason)
                  SELECT pet_id, previous, quantity, at, key_id, key_name, request_id, reason FROM ok ORDER BY ord),
         bump AS (UPDATE store_state SET version = version + 1
                  WHERE id = 1 AND (SELECT count(*) FROM cur) > 0 AND EXISTS (SELECT 1 FROM ok) RETURNING version),
         upd AS (UPDATE inventory i SET quantity = ok.quantity, version = i.version + 1, change_seq = bump.version, updated_at = ok.at
                 FROM ok, bump WHERE i.pet_id = ok.pet_id RETURNING i.pet_id, i.version)
    SELECT cur.pet_id AS "petId", cur.quantity, cur.status, cur.version, upd.version AS "newVersion"
    FROM c LEFT JOIN cur ON cur.pet_id = c.pet_id LEFT JOIN upd ON upd.pet_id = c.pet_id ORDER BY c.ord`,
} as const satisfies Statement;

/**
 * Claims the batch's idempotency keys (each at most once per batch), in key order, so that
 * batches of several instances claim in one order and never wait for each other in a circle.
 * A key another transaction is claiming waits here until that one commits or rolls back.
 */
export const CLAIM_KEYS = {
  name: 'idempotency-claim-batch',
  text: `INSERT INTO idempotency_records (api_key_id, idem_key, fingerprint, outcome, created_at, expires_at)
         SELECT k, i, f, NULL, a, e FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::timestamptz[]) AS t(k, i, f, a, e)
         ORDER BY k, i
         ON CONFLICT (api_key_id, idem_key) DO NOTHING RETURNING api_key_id AS "keyId", idem_key AS "key"`,
} as const satisfies Statement;

/** The records of keys already claimed, locked until this transaction ends. */
export const FIND_KEYS = {
  name: 'idempotency-find-batch',
  text: `SELECT r.api_key_id AS "keyId", r.idem_key AS "key", r.fingerprint, r.outcome, r.expires_at <= t.a AS expired
         FROM idempotency_records r JOIN unnest($1::text[], $2::text[], $3::timestamptz[]) AS t(k, i, a) ON r.api_key_id = t.k AND r.idem_key = t.i
         ORDER BY r.api_key_id, r.idem_key FOR UPDATE OF r`,
} as const satisfies Statement;

/** Stores each applied change's outcome under its key (an expired record is replaced). */
export const SAVE_OUTCOMES = {
  name: 'idempotency-save-batch',
  text: `INSERT INTO idempotency_records (api_key_id, idem_key, fingerprint, outcome, created_at, expires_at)
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[], $6::timestamptz[])
         ON CONFLICT (api_key_id, idem_key) DO UPDATE SET fingerprint = excluded.fingerprint, outcome = excluded.outcome,
           created_at = excluded.created_at, expires_at = excluded.expires_at`,
} as const satisfies Statement;

interface ResultRow {
  petId: bigint | null;
  quantity: number;
  status: PetStatus;
  version: bigint | null;
  newVersion: bigint | null;
}

interface RecordRow {
  keyId: string;
  key: string;
  fingerprint: string;
  outcome: string | null;
  expired: boolean;
}

type Keyed = QuantityChange & { idempotency: NonNullable<QuantityChange['idempotency']> };
type Applied = ChangeOutcome & { replayed: false };

/**
 * One batch (each pet, and each idempotency key, at most once): changes without an idempotency
 * key in one statement; with any, one transaction that claims the keys, replays or refuses the
 * ones already used, applies the rest in the same one statement and stores their outcomes.
 */
export async function applyBatch(db: Database, changes: readonly QuantityChange[]): Promise<ChangeResult[]> {
  const keyed = changes.filter((c): c is Keyed => c.idempotency !== undefined);
  if (keyed.length === 0) return applyChanges(db.query, changes);
  return db.transaction(async (query) => {
    const claimed = new Set((await query<{ keyId: string; key: string }>(CLAIM_KEYS, claimValues(keyed))).rows.map(recordId));
    const others = keyed.filter((c) => !claimed.has(changeId(c)));
    const found = new Map<string, RecordRow>();
    if (others.length > 0) {
      const { rows } = await query<RecordRow>(FIND_KEYS, [others.map((c) => c.keyId), others.map((c) => c.idempotency.key), others.map((c) => c.at.toISOString())]);
      for (const row of rows) found.set(recordId(row), row);
    }
    const earlier = changes.map((c) => (c.idempotency ? earlierResult(c as Keyed, found.get(changeId(c as Keyed))) : undefined));
    const toApply = changes.filter((_, i) => earlier[i] === undefined);
    const applied = toApply.length > 0 ? await applyChanges(query, toApply) : [];
    const outcomes = new Map(toApply.map((c, i) => [c, applied[i]!]));
    const toSave = keyed.filter((c) => outcomes.has(c));
    if (toSave.length > 0) await query(SAVE_OUTCOMES, saveValues(toSave, (c) => outcomes.get(c)!));
    return changes.map((c, i) => earlier[i] ?? outcomes.get(c)!);
  });
}

/** The answer a key's record already holds: a replay, or a refusal for another request; undefined when the change is to be applied. */
function earlierResult(change: Keyed, record: RecordRow | undefined): ChangeResult | undefined {
  // No record (purged since the claim) or an expired one: the key is free again.
  if (!record || record.expired) return undefined;
  if (record.fingerprint !== change.idempotency.fingerprint) return { kind: 'idempotency_key_reused' };
  // Claims are made and filled in one transaction, so a committed record always holds its outcome.
  if (record.outcome === null) throw new Error('an idempotency record without its outcome');
  return { ...decodeOutcome(record.outcome), replayed: true };
}

const changeId = (c: Keyed) => idempotencySlot(c.keyId, c.idempotency.key);
const recordId = (r: { keyId: string; key: string }) => idempotencySlot(r.keyId, r.key);

function claimValues(keyed: readonly Keyed[]): unknown[] {
  return [
    keyed.map((c) => c.keyId),
    keyed.map((c) => c.idempotency.key),
    keyed.map((c) => c.idempotency.fingerprint),
    keyed.map((c) => c.at.toISOString()),
    keyed.map((c) => c.idempotency.expiresAt.toISOString()),
  ];
}

function saveValues(keyed: readonly Keyed[], outcomeOf: (c: Keyed) => Applied): unknown[] {
  return [
    keyed.map((c) => c.keyId),
    keyed.map((c) => c.idempotency.key),
    keyed.map((c) => c.idempotency.fingerprint),
    keyed.map((c) => encodeOutcome(outcomeOf(c))),
    keyed.map((c) => c.at.toISOString()),
    keyed.map((c) => c.idempotency.expiresAt.toISOString()),
  ];
}

/** CHANGE_BATCH for these changes, one result each, in order. */
async function applyChanges(query: Query, changes: readonly QuantityChange[]): Promise<Applied[]> {
  const versions = (c: QuantityChange) => (c.condition && !c.condition.anyVersion ? `{${c.condition.versions.join(',')}}` : null);
  const { rows } = await query<ResultRow>(CHANGE_BATCH, [
    changes.map((c) => c.petId.toString()),
    changes.map((c) => c.quantity),
    changes.map((c) => c.at.toISOString()),
    changes.map((c) => c.keyId),
    changes.map((c) => c.keyName),
    changes.map((c) => c.requestId),
    changes.map((c) => c.reason),
    changes.map(versions),
  ]);
  return changes.map((change, i): Applied => {
    const { petId, quantity, status, version, newVersion } = rows[i]!;
    if (petId === null || version === null) return { kind: 'not_found', replayed: false };
    if (newVersion === null) return { kind: 'precondition_failed', entry: { item: { petId, quantity, status }, version: Number(version) }, replayed: false };
    return { kind: 'updated', entry: { item: { petId, quantity: change.quantity, status }, version: Number(newVersion) }, replayed: false };
  });
}
