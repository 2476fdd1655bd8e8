import { hash } from 'node:crypto';
import { setImmediate as nextTurn } from 'node:timers/promises';

/**
 * What both backends share about the storage one API key can cause: how an Idempotency-Key is
 * kept (its SHA-256 only), and how expired idempotency records and old history rows are deleted
 * (in short batches, each its own transaction, so no write waits long behind them).
 */

/** Hex SHA-256 of an Idempotency-Key: what the store keeps instead of the key (a client may put anything in it). */
export function idempotencyKeyHash(key: string): string {
  return hash('sha256', key, 'hex');
}

/** Rows one housekeeping transaction deletes at most: a few milliseconds of the write lock. */
export const HOUSEKEEPING_BATCH = 1000;

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
  return { last: head[run - 1]![0], more: young === -1 && head.length === HOUSEKEEPING_BATCH };
}
