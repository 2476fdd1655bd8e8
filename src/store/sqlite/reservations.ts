import type Database from 'better-sqlite3';
import type { EndOutcome, Reservation, ReservationResult, ReservationWrite, ReservationWriteResult } from '../../domain/reservation.js';
import type { AppendedSignal } from '../appended.js';
import type { GroupCommit } from '../group-commit.js';
import type { Reservations } from '../store.js';
import { committed, type Run } from './connection.js';
import { reservationReads } from './reservation-reads.js';

/** The writes of reservations in the writer thread: creations and ends grouped (reservation-writes.ts), the sweep's apart. */
export interface ReservationCommits {
  ops: GroupCommit<ReservationWrite, ReservationWriteResult>;
  expireDue: (_: void) => Promise<Reservation[]>;
}

/**
 * The SQLite store's reservations: reads on the event loop's connection, writes in the writer
 * thread like every frequent write (its fsync never stops the event loop), each a transaction of its
 * own. Listeners of onAppended are told after each write that appended.
 */
export function reservations(db: Database.Database, run: Run, commits: ReservationCommits, appended: AppendedSignal): Reservations {
  const reads = reservationReads(db);
  return {
    async create(reservation) {
      const result = (await commits.ops.submit({ reserve: reservation })) as ReservationResult;
      if (result.kind === 'created' && !result.replayed) appended.emit();
      return result;
    },
    get: async (id) => run(() => reads.get(id, new Date())),
    list: async (query) => run(() => reads.list(query, new Date())),
    async end(id, end, origin) {
      const outcome = (await commits.ops.submit({ end: { id, how: end, origin } })) as EndOutcome;
      // A reservation that lapsed before this end was marked by it, with its event.
      appended.emit();
      return outcome;
    },
    async expireDue() {
      // Most looks find nothing due: answered from the index, without the writer's lock.
      if (!run(() => reads.anyDue(new Date()))) return [];
      const expired = await committed(run, () => commits.expireDue());
      if (expired.length > 0) appended.emit();
      return expired;
    },
    held: async () => run(() => reads.held(new Date())),
  };
}
