import type Database from 'better-sqlite3';
import type { ListedReservation, Reservation, ReservationQuery, ReservationStatus } from '../../domain/reservation.js';
import { liveStatus } from '../../domain/reservation.js';
import { LIMIT, perConnection } from './connection.js';

type ReservationRow = [place: bigint, id: string, status: string, reference: string | null, createdAt: bigint, expiresAt: bigint, endedAt: bigint | null];

const COLUMNS = 'place, id, status, reference, created_at, expires_at, ended_at';

/** One reservation by id, with its place (the list's order), as stored: an active one past its expiry still reads active here. */
export type ReservationReader = (id: string) => (Reservation & { place: bigint }) | undefined;

/** The reservation reader of a connection (the writer's, to judge; the event loop's, to answer). */
export const reservationReader = perConnection((db: Database.Database): ReservationReader => {
  const byId = db.prepare(`SELECT ${COLUMNS} FROM reservations WHERE id = ?`).raw(true).safeIntegers(true);
  const items = itemsReader(db);
  return (id) => {
    const row = byId.get(id) as ReservationRow | undefined;
    return row && { ...toReservation(row, items(row[0])), place: row[0] };
  };
});

/** The items of the reservation at `place`, in the order it was asked for. */
function itemsReader(db: Database.Database): (place: bigint) => Reservation['items'] {
  const stmt = db.prepare('SELECT pet_id, quantity FROM reservation_items WHERE place = ? ORDER BY position').raw(true).safeIntegers(true);
  return (place) => (stmt.all(place) as [bigint, bigint][]).map(([petId, quantity]) => ({ petId, quantity: Number(quantity) }));
}

/** The reads of the reservations port, on the event loop's connection: each one read transaction, and an active one past its expiry shown expired. */
export interface ReservationReads {
  get(id: string, now: Date): Reservation | undefined;
  list(query: ReservationQuery, now: Date): ListedReservation[];
  held(now: Date): { active: number; units: number };
  /** Whether any active reservation is past its expiry: the sweep's look before it takes the write lock. */
  anyDue(now: Date): boolean;
}

/**
 * The list's filter by live status (decisions 12.4): an active reservation past its expiry is
 * expired to every reader, marked or not. :now is Unix ms.
 */
const STATUS_WHERE: Record<ReservationStatus, string> = {
  active: "status = 'active' AND expires_at > :now",
  expired: "(status = 'expired' OR (status = 'active' AND expires_at <= :now))",
  committed: "status = 'committed'",
  released: "status = 'released'",
};

export function reservationReads(db: Database.Database): ReservationReads {
  const read = reservationReader(db);
  const items = itemsReader(db);
  const pages = new Map<string, Database.Statement>();
  const page = (query: ReservationQuery) => {
    const where = [
      ...(query.status ? [STATUS_WHERE[query.status]] : []),
      ...(query.petId !== undefined ? ['place IN (SELECT place FROM reservation_items WHERE pet_id = :petId)'] : []),
      ...(query.before !== undefined ? ['place < :before'] : []),
    ];
    const sql = `SELECT ${COLUMNS} FROM reservations ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY place DESC LIMIT ${LIMIT.replace('?', ':limit')}`;
    let stmt = pages.get(sql);
    if (!stmt) pages.set(sql, (stmt = db.prepare(sql).raw(true).safeIntegers(true)));
    return stmt;
  };
  const held = db
    .prepare("SELECT count(DISTINCT r.place), coalesce(sum(i.quantity), 0) FROM reservations r JOIN reservation_items i ON i.place = r.place WHERE r.status = 'active' AND r.expires_at > ?")
    .raw(true);
  const due = db.prepare("SELECT 1 FROM reservations WHERE status = 'active' AND expires_at <= ? LIMIT 1").pluck();
  const list = db.transaction((query: ReservationQuery, now: Date): ListedReservation[] => {
    const rows = page(query).all({
      now: now.getTime(),
      limit: query.limit,
      ...(query.petId !== undefined ? { petId: query.petId } : {}),
      ...(query.before !== undefined ? { before: query.before } : {}),
    }) as ReservationRow[];
    return rows.map((row) => {
      const reservation = toReservation(row, items(row[0]));
      return { reservation: { ...reservation, status: liveStatus(reservation, now) }, place: row[0] };
    });
  });
  const get = db.transaction((id: string, now: Date): Reservation | undefined => {
    const found = read(id);
    if (!found) return undefined;
    return { ...withoutPlace(found), status: liveStatus(found, now) };
  });
  return {
    get: (id, now) => get.deferred(id, now),
    list: (query, now) => list.deferred(query, now),
    anyDue: (now) => due.get(now.getTime()) !== undefined,
    held(now) {
      const [active, units] = held.get(now.getTime()) as [number, number];
      return { active, units };
    },
  };
}

/**
 * What holds past their expiry that the sweep has not marked yet still hold of each pet, at `now`
 * (Unix ms): a range of the due index, almost always empty. Every read of entries subtracts it, in
 * the read's own transaction, so no read counts a lapsed hold (decisions 12.4). `lapsed` is ''
 * when there is none, else the latest expiry among them: at one store version the set grows only
 * with time, so that expiry names it.
 */
export function lapsedHoldsReader(db: Database.Database): (now: number) => { held: Map<bigint, number>; lapsed: string } {
  const stmt = db
    .prepare(
      `SELECT i.pet_id, sum(i.quantity), max(r.expires_at) FROM reservations r JOIN reservation_items i ON i.place = r.place
       WHERE r.status = 'active' AND r.expires_at <= ? GROUP BY i.pet_id`,
    )
    .raw(true)
    .safeIntegers(true);
  return (now) => {
    const rows = stmt.all(now) as [bigint, bigint, bigint][];
    const held = new Map<bigint, number>();
    let latest = 0n;
    for (const [petId, quantity, expiresAt] of rows) {
      held.set(petId, Number(quantity));
      if (expiresAt > latest) latest = expiresAt;
    }
    return { held, lapsed: rows.length === 0 ? '' : String(latest) };
  };
}

/** A reservation as the API knows it, without its place in the list. */
export function withoutPlace(r: Reservation & { place?: bigint }): Reservation {
  return { id: r.id, status: r.status, items: r.items, reference: r.reference, createdAt: r.createdAt, expiresAt: r.expiresAt, endedAt: r.endedAt };
}

function toReservation(row: ReservationRow, items: Reservation['items']): Reservation {
  return {
    id: row[1],
    status: row[2] as ReservationStatus,
    items,
    reference: row[3],
    createdAt: new Date(Number(row[4])),
    expiresAt: new Date(Number(row[5])),
    endedAt: row[6] === null ? null : new Date(Number(row[6])),
  };
}
