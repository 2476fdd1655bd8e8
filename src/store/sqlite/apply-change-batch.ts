import type Database from 'better-sqlite3';
import { encodeBatchOutcome, idempotencyKeyHash, judgeIdempotency, refusePastCap, replayBatchOutcome } from '../../domain/idempotency.js';
import { judgeChange, type BatchOutcome, type ChangeBatch, type ChangeBatchResult } from '../../domain/inventory.js';
import type { BatchOptions } from './apply-batch.js';
import { changeStatements } from './change-statements.js';

/**
 * Applies a ChangeBatch all or nothing, in one IMMEDIATE transaction (in the writer thread, so
 * its fsync never stops the event loop): the batch's idempotency record first (replayed, or
 * refused past the cap), then each change judged by domain judgeChange on the entry it finds, in
 * the order given. The first that cannot apply refuses the batch and nothing is written but the
 * refusal's idempotency record; otherwise each change writes its history row and entry, and the
 * events, the store version and the change log come last, once, as in every write. Each pet at
 * most once: the store's applyBatch refuses a repeat before it reaches here (domain requireEachPetOnce).
 */
export function applyChangeBatch(db: Database.Database, batch: ChangeBatch, options: BatchOptions = {}): ChangeBatchResult {
  let apply = appliers.get(db);
  if (!apply) appliers.set(db, (apply = applierOn(db)));
  return apply.immediate(batch, options.omitEvents ?? false);
}

type Applier = Database.Transaction<(batch: ChangeBatch, omitEvents: boolean) => ChangeBatchResult>;

/** Made at a connection's first batch, then reused. */
const appliers = new WeakMap<Database.Database, Applier>();

function applierOn(db: Database.Database): Applier {
  const write = changeStatements(db);
  return db.transaction((batch: ChangeBatch, omitEvents: boolean): ChangeBatchResult => {
    const { changes, ...origin } = batch;
    const idem = origin.idempotency;
    const keyHash = idem && idempotencyKeyHash(idem.key);
    if (idem) {
      const verdict = judgeIdempotency(write.findRecord(origin.keyId, keyHash!, origin.at), idem.fingerprint, replayBatchOutcome);
      if (verdict.kind === 'answer') return verdict.result;
      const full = verdict.kind === 'new' ? refusePastCap(write.recordsCap(origin.keyId, origin.at), 1, idem.recordsPerKey, origin.at) : undefined;
      if (full) return full.result;
    }
    const outcome = judgeAndApply();
    if (idem) write.saveRecord(origin.keyId, keyHash!, idem, encodeBatchOutcome(outcome), origin.at);
    return { ...outcome, replayed: false };

    function judgeAndApply(): BatchOutcome {
      // Every change judged before any is written: a refusal leaves nothing to roll back.
      const verdicts: Extract<ReturnType<typeof judgeChange>, { kind: 'apply' }>[] = [];
      for (const [index, change] of changes.entries()) {
        const verdict = judgeChange(write.entry(change.petId), change);
        if (verdict.kind !== 'apply') return { kind: 'refused', index, outcome: verdict };
        verdicts.push(verdict);
      }
      const entries = changes.map((change, i) => write.apply({ ...origin, ...change }, verdicts[i]!));
      write.recordApplied(
        changes.map(({ petId }) => ({ petId, source: origin.source })),
        omitEvents,
      );
      return { kind: 'applied', entries };
    }
  });
}
