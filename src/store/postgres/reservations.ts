import type { QueryResultRow } from 'pg';
import { idempotencyKeyHash, judgeIdempotency, refusePastCap } from '../../domain/idempotency.js';
import type { ChangeOrigin } from '../../domain/inventory.js';
import {
  encodeReservationOutcome,
  END_STATUS,
  EXPIRE_BATCH,
  judgeEnd,
  replayReservationOutcome,
  type NewReservation,
  type Reservation,
  type ReservationOutcome,
  type ReservationQuery,
  type ReservationResult,
  type ReservationStatus,
} from '../../domain/reservation.js';
import type { Reservations } from '../store.js';
import { FIND_KEYS, LOCK_COUNTS, recordsCap, SAVE_OUTCOMES, type Query, type RecordRow } from './apply-batch.js';
import type { Pooled, Statement } from './connection.js';
import type { EventLog } from './events.js';
import { CREATE_RESERVATION, END_RESERVATION, EXPIRE_DUE } from './reservation-writes.js';


const COLUMNS = `r.place, r.id, r.status, r.reference, r.created_at AS "createdAt", r.expires_at AS "expiresAt", r.ended_at AS "endedAt",
  r.status = 'active' AND r.expires_at <= now() AS lapsed,
  (SELECT json_agg(json_build_array(i.pet_id::text, i.quantity) ORDER BY i.position) FROM reservation_items i WHERE i.place = r.place)::text AS items`;

const STATEMENTS = {
  get: { name: 'reservation-get', text: `SELECT ${COLUMNS} FROM reservations r WHERE r.id = $1` },
  held: {
    name: 'reservations-held',
    text: `SELECT count(DISTINCT r.place)::int AS active, coalesce(sum(i.quantity), 0)::bigint AS units
           FROM reservations r JOIN reservation_items i ON i.place = r.place WHERE r.status = 'active' AND r.expires_at > now()`,
  },
} as const satisfies Record<string, Statement>;

/** The list's filter by live status (decisions 12.4): an active reservation past its expiry is expired to every reader. */
const STATUS_WHERE: Record<ReservationStatus, string> = {
  active: "r.status = 'active' AND r.expires_at > now()",
  expired: "(r.status = 'expired' OR (r.status = 'active' AND r.expires_at <= now()))",
  committed: "r.status = 'committed'",
  released: "r.status = 'released'",
};

interface ReservationRow {
  place: bigint;
  id: string;
  status: ReservationStatus;
  reference: string | null;
  createdAt: Date;
  expiresAt: Date;
  endedAt: Date | null;
  lapsed?: boolean;
  items: string;
}

interface JudgedRow {
  position: bigint;
  found: boolean;
  quantity: number | null;
  reserved: number | null;
  createdAt: Date | null;
  expiresAt: Date | null;
  lapsed: number;
}

/** Where a creation runs: one statement on its own, or inside the transaction of its Idempotency-Key. */
type Run = <R extends QueryResultRow>(statement: Statement, values: unknown[]) => Promise<{ rows: R[] }>;

/** A refusal that holds past their expiry may explain: the sweep marks them and the creation runs once more. */
class LapsedHolds extends Error {}

/**
 * The PostgreSQL store's reservations: each write one statement (reservation-writes.ts); with an
 * Idempotency-Key, one transaction that locks the API key's count first, as a keyed change does.
 */
export function reservations({ query, run }: Pooled, log: EventLog, transaction: <T>(fn: (query: Query) => Promise<T>) => Promise<T>): Reservations {
  const expireDue = async (): Promise<Reservation[]> => {
    const { rows } = await query<ReservationRow>(EXPIRE_DUE, [EXPIRE_BATCH, log.channel]);
    if (rows.length > 0) log.appended.emit();
    return rows.map(toReservation);
  };

  /** One try: the statement, and the outcome it says; LapsedHolds on a refusal that lapsed holds may explain, on the first try. */
  const hold = async (runOn: Run, r: NewReservation, first: boolean): Promise<ReservationOutcome> => {
    const { origin } = r;
    const { rows } = await runOn<JudgedRow>(CREATE_RESERVATION, [
      r.items.map((i) => i.petId.toString()),
      r.items.map((i) => i.quantity),
      r.id,
      r.reference,
      r.ttlSeconds,
      origin.source,
      origin.keyId,
      origin.requestId,
      log.channel,
    ]);
    const made = rows[0]?.createdAt;
    if (made && rows[0]!.expiresAt) {
      log.appended.emit();
      return {
        kind: 'created',
        reservation: { id: r.id, status: 'active', items: r.items.map((i) => ({ ...i })), reference: r.reference, createdAt: made, expiresAt: rows[0]!.expiresAt, endedAt: null },
      };
    }
    for (const [index, row] of rows.entries()) {
      const { petId, quantity } = r.items[index]!;
      if (!row.found) return { kind: 'not_found', index, petId };
      const available = Math.max(0, row.quantity! - row.reserved!);
      if (available >= quantity) continue;
      if (first && row.lapsed > 0) throw new LapsedHolds();
      return { kind: 'insufficient_stock', index, petId, quantity: row.quantity!, reserved: row.reserved!, available };
    }
    throw new Error('CREATE_RESERVATION held nothing, yet every item fits');
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

  const create = async (r: NewReservation, first: boolean): Promise<ReservationResult> =>
    r.origin.idempotency ? keyed(r, first) : { ...(await hold((s, v) => query(s, v), r, first)), replayed: false };

  return {
    create: (r) =>
      run(async () => {
        try {
          return await create(r, true);
        } catch (err) {
          if (!(err instanceof LapsedHolds)) throw err;
          // Rolled back: the lapsed holds are marked (their own statement, their events), and the creation judged again.
          await expireDue();
          return create(r, false);
        }
      }),
    async get(id) {
      const row = (await query<ReservationRow>(STATEMENTS.get, [id])).rows[0];
      return row && toReservation(row);
    },
    async list(q: ReservationQuery) {
      const values: unknown[] = [q.limit];
      const where = q.status ? [STATUS_WHERE[q.status]] : [];
      if (q.petId !== undefined) where.push(`r.place IN (SELECT place FROM reservation_items WHERE pet_id = $${values.push(q.petId.toString())})`);
      if (q.before !== undefined) where.push(`r.place < $${values.push(q.before.toString())}`);
      const text = `SELECT ${COLUMNS} FROM reservations r ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY r.place DESC LIMIT $1`;
      const { rows } = await query<ReservationRow>({ name: 'reservations-list', text }, values);
      return rows.map((row) => ({ reservation: toReservation(row), place: row.place }));
    },
    async end(id, how, origin: ChangeOrigin) {
      const status = END_STATUS[how];
      const { rows } = await query<ReservationRow & { held: bigint }>(END_RESERVATION, [id, status, origin.source, origin.keyId, origin.keyName, origin.requestId, log.channel]);
      const ended = rows[0];
      if (ended) {
        log.appended.emit();
        const found = (await query<ReservationRow>(STATEMENTS.get, [id])).rows[0]!;
        return { kind: 'ended', reservation: { ...toReservation(found), status, endedAt: ended.endedAt } };
      }
      const found = (await query<ReservationRow>(STATEMENTS.get, [id])).rows[0];
      const verdict = judgeEnd(found && toReservation(found), how);
      if (verdict === 'apply') throw new Error(`END_RESERVATION left out reservation ${id}, which is active`);
      return verdict;
    },
    expireDue: () => run(expireDue),
    async held() {
      const row = (await query<{ active: number; units: bigint }>(STATEMENTS.held)).rows[0]!;
      return { active: row.active, units: Number(row.units) };
    },
  };
}

/** A row as the reservation it is, an active one past its expiry (by the server's clock) shown expired. */
function toReservation(row: Omit<ReservationRow, 'place'>): Reservation {
  const items = (JSON.parse(row.items ?? '[]') as [string, number][]).map(([petId, quantity]) => ({ petId: BigInt(petId), quantity }));
  const reservation: Reservation = { id: row.id, status: row.status, items, reference: row.reference, createdAt: row.createdAt, expiresAt: row.expiresAt, endedAt: row.endedAt };
  return row.lapsed ? { ...reservation, status: 'expired' } : reservation;
}
