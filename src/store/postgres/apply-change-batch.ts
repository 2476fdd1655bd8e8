import { encodeBatchOutcome, idempotencyKeyHash, judgeIdempotency, refusePastCap, replayBatchOutcome } from '../../domain/idempotency.js';
import { judgeChange, requireEachPetOnce, type BatchOutcome, type ChangeBatch, type ChangeBatchResult, type InventoryEntry } from '../../domain/inventory.js';
import type { PetStatus } from '../../schemas/inventory.js';
import { applyChanges, FIND_KEYS, LOCK_COUNTS, recordsCap, SAVE_OUTCOMES, type Database, type RecordRow } from './apply-batch.js';
import type { Statement } from './connection.js';

/** The batch's entries, locked in petId order as every write locks them (CHANGE_BATCH locks them again, already held). */
const LOCK_ENTRIES = {
  name: 'inventory-lock-batch',
  text: `SELECT pet_id AS "petId", quantity, status, version, reserved FROM inventory WHERE pet_id = ANY($1::bigint[]) AND retired_at IS NULL
         ORDER BY pet_id FOR UPDATE`,
} as const satisfies Statement;

interface EntryRow {
  petId: bigint;
  quantity: number;
  status: PetStatus;
  version: bigint;
  reserved: number;
}

/**
 * Applies a ChangeBatch all or nothing, in one transaction. Keyed, it first locks the API key's
 * count and finds the batch's record (LOCK_COUNTS, FIND_KEYS: replayed, refused, or past the cap),
 * as a keyed change does. Then it locks the batch's entries in petId order and judges each change
 * by domain judgeChange, in the order given: the first that cannot apply refuses the batch, and
 * nothing is written but the refusal's record. Otherwise CHANGE_BATCH applies them all in one
 * statement, store_state last, and the outcome is stored. Locks go counts, entries, store_state,
 * as in every write, so batches and changes of several instances cannot deadlock.
 */
export async function applyChangeBatch(db: Database, batch: ChangeBatch): Promise<ChangeBatchResult> {
  requireEachPetOnce(batch);
  const { changes, ...origin } = batch;
  const idem = origin.idempotency;
  const keyHash = idem && idempotencyKeyHash(idem.key);
  return db.transaction(async (query): Promise<ChangeBatchResult> => {
    if (idem) {
      const held = (await query<{ records: number }>(LOCK_COUNTS, [[origin.keyId]])).rows[0]?.records ?? 0;
      const record = (await query<RecordRow>(FIND_KEYS, [[origin.keyId], [keyHash], [origin.at.toISOString()]])).rows[0];
      const verdict = judgeIdempotency(record, idem.fingerprint, replayBatchOutcome);
      if (verdict.kind === 'answer') return verdict.result;
      if (verdict.kind === 'new') {
        const past = await refusePastCap(recordsCap(query, origin.keyId, held, origin.at, []), 1, idem.recordsPerKey, origin.at);
        if (past) return past.result;
      }
    }
    const petIds = changes.map((c) => c.petId).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    const { rows } = await query<EntryRow>(LOCK_ENTRIES, [petIds.map(String)]);
    const found = new Map(
      rows.map((r): [bigint, InventoryEntry] => {
        const item = r.reserved > 0 ? { petId: r.petId, quantity: r.quantity, status: r.status, reserved: r.reserved } : { petId: r.petId, quantity: r.quantity, status: r.status };
        return [r.petId, { item, version: Number(r.version) }];
      }),
    );
    let outcome: BatchOutcome | undefined;
    for (const [index, change] of changes.entries()) {
      const verdict = judgeChange(found.get(change.petId), change);
      if (verdict.kind === 'apply') continue;
      outcome = { kind: 'refused', index, outcome: verdict };
      break;
    }
    if (!outcome) {
      const applied = changes.length === 0 ? [] : await applyChanges(query, changes.map((c) => ({ ...origin, ...c })), db);
      // The rows are held since they were judged: CHANGE_BATCH can only agree.
      const entries = applied.map((a, i) => {
        if (a.kind !== 'updated') throw new Error(`CHANGE_BATCH refused changes[${i}] (${a.kind}), which judgeChange applied on the row it holds`);
        return a.entry;
      });
      outcome = { kind: 'applied', entries };
    }
    if (idem) {
      const at = origin.at.toISOString();
      await query(SAVE_OUTCOMES, [[origin.keyId], [keyHash], [idem.fingerprint], [encodeBatchOutcome(outcome)], [at], [idem.expiresAt.toISOString()]]);
    }
    return { ...outcome, replayed: false };
  });
}
