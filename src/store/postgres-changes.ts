import type { QueryResult, QueryResultRow } from 'pg';
import { StoreUnavailableError } from '../errors.js';
import type { PetStatus } from '../schemas/inventory.js';
import type { ChangeResult, QuantityChange } from './store.js';

/** Most changes in one statement. */
export const BATCH_MAX = 256;
/** Most changes waiting for a batch: beyond, a PATCH is answered 503 at once rather than queueing on a slow database. */
export const QUEUE_MAX = 4 * BATCH_MAX;

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
};

export type RunQuery = <R extends QueryResultRow>(statement: typeof CHANGE_BATCH, values: unknown[]) => Promise<QueryResult<R>>;

interface Pending {
  change: QuantityChange;
  resolve: (result: ChangeResult) => void;
  reject: (err: unknown) => void;
}

interface ResultRow {
  petId: bigint | null;
  quantity: number;
  status: PetStatus;
  version: bigint | null;
  newVersion: bigint | null;
}

/**
 * Group commit on PostgreSQL: one batch statement in flight at a time, and the changes that
 * arrive meanwhile go together in the next, one round trip and one commit for all of them.
 * Each change is answered once its batch has committed; a later change of a pet already in
 * the batch waits for the next one, so changes of one pet keep their order.
 */
export class ChangeBatcher {
  readonly #query: RunQuery;
  #queue: Pending[] = [];
  #busy = false;

  constructor(query: RunQuery) {
    this.#query = query;
  }

  apply(change: QuantityChange): Promise<ChangeResult> {
    if (this.#queue.length >= QUEUE_MAX) {
      return Promise.reject(new StoreUnavailableError(`more than ${QUEUE_MAX} changes are waiting for the database`));
    }
    return new Promise((resolve, reject) => {
      this.#queue.push({ change, resolve, reject });
      this.#next();
    });
  }

  #next(): void {
    if (this.#busy || this.#queue.length === 0) return;
    this.#busy = true;
    const batch = this.#take();
    void this.#run(batch).finally(() => {
      this.#busy = false;
      this.#next();
    });
  }

  /** The oldest changes, up to BATCH_MAX, each pet's first only; the rest stay queued in order. */
  #take(): Pending[] {
    const pets = new Set<bigint>();
    const batch: Pending[] = [];
    const rest: Pending[] = [];
    for (const pending of this.#queue) {
      if (batch.length < BATCH_MAX && !pets.has(pending.change.petId)) {
        pets.add(pending.change.petId);
        batch.push(pending);
      } else {
        rest.push(pending);
      }
    }
    this.#queue = rest;
    return batch;
  }

  async #run(batch: readonly Pending[]): Promise<void> {
    try {
      const results = await execute(this.#query, batch.map((p) => p.change));
      batch.forEach((p, i) => p.resolve(results[i]!));
    } catch (err) {
      if (batch.length === 1 || err instanceof StoreUnavailableError) {
        for (const p of batch) p.reject(err);
        return;
      }
      // The statement is atomic, so nothing was written: one change the database refuses must not fail the others.
      for (const p of batch) await this.#run([p]);
    }
  }
}

async function execute(query: RunQuery, changes: readonly QuantityChange[]): Promise<ChangeResult[]> {
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
  return changes.map((change, i): ChangeResult => {
    const { petId, quantity, status, version, newVersion } = rows[i]!;
    if (petId === null || version === null) return { kind: 'not_found', replayed: false };
    if (newVersion === null) return { kind: 'precondition_failed', entry: { item: { petId, quantity, status }, version: Number(version) }, replayed: false };
    return { kind: 'updated', entry: { item: { petId, quantity: change.quantity, status }, version: Number(newVersion) }, replayed: false };
  });
}
