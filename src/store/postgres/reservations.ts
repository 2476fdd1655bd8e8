import { idempotencyKeyHash, judgeIdempotency, refusePastCap } from '../../domain/idempotency.js';
import type { ChangeOrigin } from '../../domain/inventory.js';
import {
  encodeReservationOutcome,
  type EndOutcome,
  type ReservationEnd,
  type ReservationWrite,
  type ReservationWriteResult,
  EXPIRE_BATCH,
  replayReservationOutcome,
  type NewReservation,
  type Reservation,
  type ReservationOutcome,
  type ReservationQuery,
  type ReservationResult,
  type ReservationStatus,
} from '../../domain/reservation.js';
import { reservationGroupCommit, type CommitBatch } from '../group-commit.js';
import type { Reservations } from '../store.js';
import { FIND_KEYS, LOCK_COUNTS, recordsCap, SAVE_OUTCOMES, type Query, type RecordRow } from './apply-batch.js';
import type { Pooled, Statement } from './connection.js';
import type { EventLog } from './events.js';
import { applyReservationGroup } from './reservation-group.js';
import { lapsedHold, RESERVATION_COLUMNS, toReservation, type ReservationRow } from './reservation-rows.js';
import { EXPIRE_DUE } from './reservation-writes.js';


const STATEMENTS = {
  get: { name: 'reservation-get', text: `SELECT ${RESERVATION_COLUMNS} FROM reservations r WHERE r.id = $1` },
  held: {
    name: 'reservations-held',
    text: `SELECT count(DISTINCT r.place)::int AS active, coalesce(sum(i.quantity), 0)::bigint AS units
           FROM reservations r JOIN reservation_items i ON i.place = r.place WHERE r.status = 'active' AND r.expires_at > now()`,
  },
} as const satisfies Record<string, Statement>;

/** The list's filter by live status (decisions 12.4): an active reservation past its expiry is expired to every reader. */
const STATUS_WHERE: Record<ReservationStatus, string> = {
  active: "r.status = 'active' AND r.expires_at > now()",
  expired: `(r.status = 'expired' OR (${lapsedHold('r')}))`,
  committed: "r.status = 'committed'",
  released: "r.status = 'released'",
};



/** A refusal that holds past their expiry may explain: the sweep marks them and the creation runs once more. */
class LapsedHolds extends Error {}

/**
 * The PostgreSQL store's reservations: every creation and end judged and written by
 * applyReservationGroup (reservation-group.ts), the writes waiting together in one transaction
 * (commitGroup), a write alone as a group of one; with an Idempotency-Key, a creation is a
 * transaction of its own that locks the API key's count first, as a keyed change does.
 */
export function reservations(
  { query, run }: Pooled,
  log: EventLog,
  transaction: <T>(fn: (query: Query) => Promise<T>) => Promise<T>,
  timeoutMs: number,
): Reservations & { close(): Promise<void> } {
  const expireDue = async (): Promise<Reservation[]> => {
    const { rows } = await query<ReservationRow>(EXPIRE_DUE, [EXPIRE_BATCH, log.channel]);
    if (rows.length > 0) log.appended.emit();
    return rows.map(toReservation);
  };

  /**
   * One creation in transaction `q`, judged as a group's are (reservation-group.ts); LapsedHolds on
   * a refusal that lapsed holds may explain, on the first try.
   */
  const hold = async (q: Query, r: NewReservation, first: boolean): Promise<ReservationOutcome> => {
    const [answer] = await applyReservationGroup(q, [{ reserve: r }], log.channel, first);
    if (answer === undefined) throw new LapsedHolds();
    // The outcome as an Idempotency-Key keeps it: whether it is a replay is the answer's, not the outcome's.
    const outcome: ReservationOutcome & { replayed?: boolean } = { ...(answer as ReservationOutcome) };
    delete outcome.replayed;
    return outcome;
  };

  /** One end in a transaction of its own, judged as a group's are. */
  const finish = async (id: string, how: ReservationEnd, origin: ChangeOrigin): Promise<EndOutcome> => {
    const [answer] = await transaction((q) => applyReservationGroup(q, [{ end: { id, how, origin } }], log.channel, false));
    return answer as EndOutcome;
  };

  const keyed = (r: NewReservation, first: boolean): Promise<ReservationResult> => {
    const { origin } = r;
    const idem = origin.idempotency!;
    const keyHash = idempotencyKeyHash(idem.key);
    return transaction(async (q) => {
      const held = (await q<{ records: number }>(LOCK_COUNTS, [[origin.keyId]])).rows[0]?.records ?? 0;
      const record = (await q<RecordRow>(FIND_KEYS, [[origin.keyId], [keyHash], [origin.at.toISOString()]])).rows[0];
      const verdict = judgeIdempotency(record, idem.fingerprint, replayReservationOutcome);
      if (verdict.kind === 'answer') return verdict.result;
      if (verdict.kind === 'new') {
        const past = await refusePastCap(recordsCap(q, origin.keyId, held, origin.at, []), 1, idem.recordsPerKey, origin.at);
        if (past) return past.result;
      }
      const outcome = await hold(q, r, first);
      const at = origin.at.toISOString();
      await q(SAVE_OUTCOMES, [[origin.keyId], [keyHash], [idem.fingerprint], [encodeReservationOutcome(outcome)], [at], [idem.expiresAt.toISOString()]]);
      return { ...outcome, replayed: false };
    });
  };

  /** A creation on its own: one statement, or the transaction of its Idempotency-Key; once more after marking the lapsed holds that refused it. */
  const createAlone = async (r: NewReservation): Promise<ReservationResult> => {
    const once = async (first: boolean): Promise<ReservationResult> => {
      const result = r.origin.idempotency ? await keyed(r, first) : { ...(await transaction((q) => hold(q, r, first))), replayed: false };
      if (result.kind === 'created' && !result.replayed) log.appended.emit();
      return result;
    };
    try {
      return await once(true);
    } catch (err) {
      if (!(err instanceof LapsedHolds)) throw err;
      // Rolled back: the lapsed holds are marked (their own statement, their events), and the creation judged again.
      await expireDue();
      return once(false);
    }
  };

  const endAlone = async (id: string, how: ReservationEnd, origin: ChangeOrigin): Promise<EndOutcome> => {
    const outcome = await finish(id, how, origin);
    if (outcome.kind === 'ended') log.appended.emit();
    return outcome;
  };

  const alone = (op: ReservationWrite): Promise<ReservationWriteResult> => ('end' in op ? endAlone(op.end.id, op.end.how, op.end.origin) : createAlone(op.reserve));

  /**
   * The creations (without an Idempotency-Key) and ends waiting together, in one transaction of
   * three statements whatever their number (reservation-group.ts): one WAL flush for all, and
   * store_state locked for one statement, where each write on its own held it until its commit while
   * the next waited (decisions 12.7). A creation refused where lapsed holds may stand in its way
   * runs again alone once the group has committed. A group that fails as a whole is run again one
   * write at a time by the group commit (group-commit.ts), so a write that fails fails by itself.
   */
  const commitGroup: CommitBatch<ReservationWrite, ReservationWriteResult> = async (ops) => {
    if (ops.length === 1) return [await alone(ops[0]!)];
    const answers = await transaction((q) => applyReservationGroup(q, ops, log.channel, true));
    if (answers.some((a) => a?.kind === 'created' || a?.kind === 'ended')) log.appended.emit();
    const settled: ReservationWriteResult[] = [];
    // One at a time, in arrival order, after the group: each marks the lapsed holds in its way, then is judged.
    for (const [i, answer] of answers.entries()) settled.push(answer ?? (await alone(ops[i]!)));
    return settled;
  };

  const group = reservationGroupCommit((writes, deadline) => run(() => commitGroup(writes, deadline)), { timeoutMs });

  return {
    create: (r) => (r.origin.idempotency ? run(() => createAlone(r)) : (group.submit({ reserve: r }) as Promise<ReservationResult>)),
    async get(id) {
      const row = (await query<ReservationRow>(STATEMENTS.get, [id])).rows[0];
      return row && toReservation(row);
    },
    async list(q: ReservationQuery) {
      const values: unknown[] = [q.limit];
      const where = q.status ? [STATUS_WHERE[q.status]] : [];
      if (q.petId !== undefined) where.push(`r.place IN (SELECT place FROM reservation_items WHERE pet_id = $${values.push(q.petId.toString())})`);
      if (q.before !== undefined) where.push(`r.place < $${values.push(q.before.toString())}`);
      const text = `SELECT ${RESERVATION_COLUMNS} FROM reservations r ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY r.place DESC LIMIT $1`;
      const { rows } = await query<ReservationRow>({ name: 'reservations-list', text }, values);
      return rows.map((row) => ({ reservation: toReservation(row), place: row.place }));
    },
    end: (id, how, origin) => group.submit({ end: { id, how, origin } }) as Promise<EndOutcome>,
    expireDue: () => run(expireDue),
    async held() {
      const row = (await query<{ active: number; units: bigint }>(STATEMENTS.held)).rows[0]!;
      return { active: row.active, units: Number(row.units) };
    },
    close: () => group.close(),
  };
}
