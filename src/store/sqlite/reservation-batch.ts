import type Database from 'better-sqlite3';
import type { ChangeOrigin } from '../../domain/inventory.js';
import type { EndOutcome, NewReservation, ReservationEnd, ReservationResult } from '../../domain/reservation.js';
import { reservationWrites, type GroupWrites } from './reservation-writes.js';

/** Most reservation writes in one transaction: a burst of checkouts shares an fsync, and no transaction holds the write lock long. */
export const RESERVATION_BATCH_MAX = 64;

/** One reservation write of a group: a creation, or an end (commit or release). */
export type ReservationOp = { reserve: NewReservation } | { endReservation: { id: string; end: ReservationEnd; origin: ChangeOrigin } };

/** What a write of the group came to. */
export type ReservationOpResult = ReservationResult | EndOutcome;

/**
 * The reservation writes waiting together, in one IMMEDIATE transaction: one fsync for all of them,
 * as the group commit does for changes of quantity (a checkout is two writes, each an fsync of its
 * own before), one look for lapsed holds and one commit of the change log (reservation-writes.ts).
 * Each write is judged on what the writes before it left, in order. A write that throws fails the
 * transaction, and the group commit runs each write alone (group-commit.ts).
 */
export function applyReservationOps(db: Database.Database, ops: readonly ReservationOp[]): ReservationOpResult[] {
  return reservationWrites(db).group(ops.map((op) => (writes: GroupWrites) => apply(op, writes)));
}

function apply(op: ReservationOp, writes: GroupWrites): ReservationOpResult {
  if ('reserve' in op) return writes.create(op.reserve);
  const { id, end, origin } = op.endReservation;
  return writes.end(id, end, origin);
}
