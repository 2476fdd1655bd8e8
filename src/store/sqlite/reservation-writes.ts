import type Database from 'better-sqlite3';
import type { NewEvent } from '../../domain/event.js';
import { idempotencyKeyHash, judgeIdempotency, refusePastCap } from '../../domain/idempotency.js';
import type { ChangeOrigin, QuantityChange } from '../../domain/inventory.js';
import {
  encodeReservationOutcome,
  END_STATUS,
  EXPIRE_BATCH,
  judgeEnd,
  judgeHold,
  replayReservationOutcome,
  type EndOutcome,
  type NewReservation,
  type Reservation,
  type ReservationEnd,
  type ReservationOutcome,
  type ReservationResult,
  type ReservationWrite,
  type ReservationWriteResult,
} from '../../domain/reservation.js';
import { reservationEvent } from '../../domain/reservation-events.js';
import { eventOf } from '../../domain/write-kinds.js';
import { changeLog } from './change-log.js';
import { changeStatements } from './change-statements.js';
import { perConnection } from './connection.js';
import { reservationReader, withoutPlace } from './reservation-reads.js';


/**
 * The SQLite store's writes of reservations, in the writer thread under SQLite's one write lock
 * (so every judgement reads what is current): the reservation's row, the entries' `reserved`, for a
 * sale their counts and history rows, and the events through the change log (change-log.ts), its
 * commit last as in every write. Creations and ends come in groups (reservationGroupCommit), each in
 * one IMMEDIATE transaction: the reservations already past their expiry are marked first (usually
 * none: one look at the due index), so a hold that lapsed is neither counted by a new reservation
 * nor ended twice; then each write, judged on what the ones before it left; then one commit of the
 * change log for the writes that held, with their events in order.
 */
export interface ReservationWrites {
  /** Creations and ends judged in order at one instant, in one transaction; a write that throws fails the transaction. */
  group(writes: readonly ReservationWrite[]): ReservationWriteResult[];
  expireDue(): Reservation[];
}

/** What a group's writes will commit: the pets they wrote and their events, in order. */
interface Written {
  petIds: bigint[];
  events: NewEvent[];
}

export const reservationWrites = perConnection(prepare);

function prepare(db: Database.Database): ReservationWrites {
  const stmt = {
    entry: db.prepare('SELECT quantity, reserved FROM inventory WHERE pet_id = ? AND retired_at IS NULL').raw(true),
    insert: db.prepare(
      'INSERT INTO reservations (id, status, reference, created_at, expires_at, key_id, request_id) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING place',
    ).pluck(),
    insertItem: db.prepare('INSERT INTO reservation_items (place, position, pet_id, quantity) VALUES (?, ?, ?, ?)'),
    hold: db.prepare('UPDATE inventory SET reserved = reserved + ? WHERE pet_id = ?'),
    // A retired entry keeps what was held of it; reserved never goes below 0.
    unhold: db.prepare('UPDATE inventory SET reserved = max(0, reserved - ?) WHERE pet_id = ?'),
    setStatus: db.prepare('UPDATE reservations SET status = ?, ended_at = ? WHERE place = ? AND status = \'active\''),
    due: db.prepare(`SELECT id FROM reservations WHERE status = 'active' AND expires_at <= ? ORDER BY expires_at LIMIT ${EXPIRE_BATCH}`).pluck(),
  };
  const read = reservationReader(db);
  const log = changeLog(db);
  const write = changeStatements(db);

  /** Ends an active reservation with `status` at `now`: its rows, the entries' holds, for a sale the counts; its pets and events go to `written`. */
  const finish = (found: Reservation & { place: bigint }, status: Reservation['status'], now: Date, origin: ChangeOrigin | undefined, written: Written): void => {
    stmt.setStatus.run(status, now.getTime(), found.place);
    for (const item of found.items) stmt.unhold.run(item.quantity, item.petId);
    const ended: Reservation = { ...withoutPlace(found), status, endedAt: now };
    if (status === 'committed' && origin) {
      for (const item of found.items) {
        const current = write.entry(item.petId);
        // An entry retired since it was held has no count to sell from.
        if (!current) continue;
        // A count taken below what was held (decisions 12.3) sells what is on the shelf: never below 0.
        const quantity = Math.max(0, current.item.quantity - item.quantity);
        const sale: QuantityChange = { ...origin, petId: item.petId, delta: quantity - current.item.quantity, reason: 'sold', at: now };
        const after = write.apply(sale, { kind: 'apply', current, quantity });
        written.events.push(
          eventOf('updated', {
            petId: item.petId,
            status: after.item.status,
            before: current.item.quantity,
            after: quantity,
            version: after.version,
            at: now,
            reason: 'sold',
            origin,
          }),
        );
      }
    }
    written.events.push(reservationEvent(ended, now, origin));
    for (const item of found.items) written.petIds.push(item.petId);
  };

  /** Marks expired the active reservations past their expiry at `now` (their pets and events to `written`). */
  const expireDue = (now: Date, written: Written): Reservation[] => {
    const marked: Reservation[] = [];
    for (const id of stmt.due.all(now.getTime()) as string[]) {
      const found = read(id)!;
      finish(found, 'expired', now, undefined, written);
      marked.push({ ...withoutPlace(found), status: 'expired', endedAt: now });
    }
    return marked;
  };

  /** The change log's commit of what a transaction's writes wrote (nothing: no commit, no new store version). */
  const commit = (written: Written): void => {
    if (written.events.length > 0) log.commit(written.petIds, written.events);
  };

  /** Judges every item, then holds them all, or none. */
  const hold = (r: NewReservation, now: Date, written: Written): ReservationOutcome => {
    const refusal = judgeHold(r.items, (petId) => {
      const row = stmt.entry.get(petId) as [number, number] | undefined;
      return row && { quantity: row[0], reserved: row[1] };
    });
    if (refusal) return refusal;
    const reservation: Reservation = {
      id: r.id,
      status: 'active',
      items: r.items.map((i) => ({ petId: i.petId, quantity: i.quantity })),
      reference: r.reference,
      createdAt: now,
      expiresAt: new Date(now.getTime() + r.ttlSeconds * 1000),
      endedAt: null,
    };
    const byApi = r.origin.source === 'api';
    const place = stmt.insert.get(r.id, 'active', r.reference, now.getTime(), reservation.expiresAt.getTime(), byApi ? r.origin.keyId : null, byApi ? r.origin.requestId : null) as bigint | number;
    for (const [position, item] of r.items.entries()) {
      stmt.insertItem.run(place, position, item.petId, item.quantity);
      stmt.hold.run(item.quantity, item.petId);
      written.petIds.push(item.petId);
    }
    written.events.push(reservationEvent(reservation, now, r.origin));
    return { kind: 'created', reservation };
  };

  const create = (r: NewReservation, now: Date, written: Written): ReservationResult => {
    const { origin } = r;
    const idem = origin.idempotency;
    const keyHash = idem && idempotencyKeyHash(idem.key);
    if (idem) {
      const verdict = judgeIdempotency(write.findRecord(origin.keyId, keyHash!, origin.at), idem.fingerprint, replayReservationOutcome);
      if (verdict.kind === 'answer') return verdict.result;
      const full = verdict.kind === 'new' ? refusePastCap(write.recordsCap(origin.keyId, origin.at), 1, idem.recordsPerKey, origin.at) : undefined;
      if (full) return full.result;
    }
    const outcome = hold(r, now, written);
    if (idem) write.saveRecord(origin.keyId, keyHash!, idem, encodeReservationOutcome(outcome), origin.at);
    return { ...outcome, replayed: false };
  };

  const end = (id: string, how: ReservationEnd, origin: ChangeOrigin, now: Date, written: Written): EndOutcome => {
    const found = read(id);
    // Past its expiry it was marked at the group's start: it reads expired.
    const verdict = judgeEnd(found && withoutPlace(found), how);
    if (verdict !== 'apply') return verdict;
    finish(found!, END_STATUS[how], now, origin, written);
    return { kind: 'ended', reservation: { ...withoutPlace(found!), status: END_STATUS[how], endedAt: now } };
  };

  /**
   * The group: no savepoint per write, since a write that throws fails the group as a whole, and
   * the group commit then runs each write alone (group-commit.ts): the one at fault fails by itself.
   */
  const group = db.transaction((writes: readonly ReservationWrite[]) => {
    const now = new Date();
    const written: Written = { petIds: [], events: [] };
    expireDue(now, written);
    const answers = writes.map((w): ReservationWriteResult => ('reserve' in w ? create(w.reserve, now, written) : end(w.end.id, w.end.how, w.end.origin, now, written)));
    commit(written);
    return answers;
  });

  const expire = db.transaction((): Reservation[] => {
    const written: Written = { petIds: [], events: [] };
    const marked = expireDue(new Date(), written);
    commit(written);
    return marked;
  });

  return {
    group: (writes) => group.immediate(writes),
    expireDue: () => expire.immediate(),
  };
}
