import type { Reservation, ReservationStatus } from '../../domain/reservation.js';

/**
 * Whether reservations row `r` lapsed: active past its expiry, by the server's clock (decisions
 * 12.4). Such a hold holds nothing to any reader, whether the sweep has marked it yet or not.
 */
export const lapsedHold = (r: string): string => `${r}.status = 'active' AND ${r}.expires_at <= now()`;

/**
 * A reservations row `r` as every read of one selects it: its columns, whether it lapsed (active
 * past its expiry, by the server's clock: decisions 12.4), and its items as JSON in the order asked.
 */
export const RESERVATION_COLUMNS = `r.place, r.id, r.status, r.reference, r.created_at AS "createdAt", r.expires_at AS "expiresAt", r.ended_at AS "endedAt",
  ${lapsedHold('r')} AS lapsed,
  (SELECT json_agg(json_build_array(i.pet_id::text, i.quantity) ORDER BY i.position) FROM reservation_items i WHERE i.place = r.place)::text AS items`;

export interface ReservationRow {
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

/** A row as the reservation it is, an active one past its expiry shown expired. */
export function toReservation(row: Omit<ReservationRow, 'place'>): Reservation {
  const items = (JSON.parse(row.items ?? '[]') as [string, number][]).map(([petId, quantity]) => ({ petId: BigInt(petId), quantity }));
  const reservation: Reservation = { id: row.id, status: row.status, items, reference: row.reference, createdAt: row.createdAt, expiresAt: row.expiresAt, endedAt: row.endedAt };
  return row.lapsed ? { ...reservation, status: 'expired' } : reservation;
}
