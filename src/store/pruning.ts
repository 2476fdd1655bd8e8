import { setImmediate as nextTurn } from 'node:timers/promises';

/**
 * How both backends prune what they need not keep (expired idempotency records, old history): in
 * short batches, each its own transaction, so no write waits long behind them.
 */

/** Rows one pruning transaction deletes at most: a few milliseconds of the write lock. */
export const PRUNE_BATCH = 1000;

/**
 * Runs `step` (one short transaction) until it reports that nothing is left, letting other work
 * run between steps; resolves to the total it deleted.
 */
export async function inBatches<C>(start: C, step: (cursor: C) => Promise<{ deleted: number; next?: C }>): Promise<number> {
  let total = 0;
  let cursor: C | undefined = start;
  while (cursor !== undefined) {
    const { deleted, next } = await step(cursor);
    total += deleted;
    cursor = next;
    if (cursor !== undefined) await nextTurn();
  }
  return total;
}

/**
 * Of the oldest history rows (id order, which is commit order), the id of the last one of the
 * leading run that `isOld` holds for, and whether rows past them may be old too (the run filled
 * the whole batch). History is pruned as a prefix of ids, so a page cursor whose row was pruned
 * has no older rows left to show.
 */
export function oldPrefix<I, A>(head: readonly (readonly [id: I, at: A])[], isOld: (at: A) => boolean): { last?: I; more: boolean } {
  const young = head.findIndex(([, at]) => !isOld(at));
  const run = young === -1 ? head.length : young;
  if (run === 0) return { more: false };
  return { last: head[run - 1]![0], more: young === -1 && head.length === PRUNE_BATCH };
}
