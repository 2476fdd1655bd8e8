import type { ChangeOrigin } from './inventory.js';
import { INT64_MAX } from './pet-id.js';
import type { ReservationItem, ReservationStatus } from './reservation-item.js';

// Declared apart, so the event log's types name them without a loop through this file's imports.
export { RESERVATION_STATUSES, type ReservationItem, type ReservationStatus } from './reservation-item.js';

/** A reservation as the store keeps it. */
export interface Reservation {
  /** res_ and 24 hex digits: random, so ids tell nothing of how many reservations a store makes. */
  id: string;
  status: ReservationStatus;
  /** In the order the request gave them; each pet once. */
  items: ReservationItem[];
  reference: string | null;
  createdAt: Date;
  expiresAt: Date;
  /** When it was committed, released or expired; null while active. */
  endedAt: Date | null;
}

/** What POST /v1/reservations asks the store to hold: all of it or nothing, for ttlSeconds from the store's clock. */
export interface NewReservation {
  id: string;
  items: readonly ReservationItem[];
  ttlSeconds: number;
  reference: string | null;
  origin: ChangeOrigin;
}

/** Why a reservation could not hold its items: the first item, by index, that found no entry or too little available stock. */
export type ReservationRefusal =
  | { kind: 'not_found'; index: number; petId: bigint }
  | { kind: 'insufficient_stock'; index: number; petId: bigint; quantity: number; reserved: number; available: number };

/** What creating a reservation did: it holds every item, or none. */
export type ReservationOutcome = { kind: 'created'; reservation: Reservation } | ReservationRefusal;

/** The outcome, `replayed` when it is the stored first outcome of the same Idempotency-Key; or the key refused, as for a change. */
export type ReservationResult =
  | (ReservationOutcome & { replayed: boolean })
  | { kind: 'idempotency_key_reused' }
  | { kind: 'idempotency_records_full'; retryAt: Date };

/** How a reservation ends by request: sold (its counts go down), or given up. Expiry is the store's own. */
export type ReservationEnd = 'commit' | 'release';

/** The status each end leaves. */
export const END_STATUS = { commit: 'committed', release: 'released' } as const satisfies Record<ReservationEnd, ReservationStatus>;

/** One reservation write as a store groups them (decisions 12.7): a creation, or an end. */
export type ReservationWrite = { reserve: NewReservation } | { end: { id: string; how: ReservationEnd; origin: ChangeOrigin } };

/** What a reservation write came to. */
export type ReservationWriteResult = ReservationResult | EndOutcome;

/**
 * What ending a reservation did: ended now; already in the status asked for (the same answer again,
 * nothing written); in another final status (not_active: nothing written); or no such reservation.
 */
export type EndOutcome =
  | { kind: 'ended'; reservation: Reservation }
  | { kind: 'already'; reservation: Reservation }
  | { kind: 'not_active'; reservation: Reservation }
  | { kind: 'not_found' };

/** What a reservation finds of an entry: its count and what active reservations hold of it; undefined: no entry (or retired). */
export type HoldableEntry = { quantity: number; reserved: number } | undefined;

/**
 * The judgement of a new reservation's items, in the order given, on what each entry has: the
 * first with no entry or less available than asked (quantity - reserved, never below 0) refuses
 * it, and nothing is held; undefined when every item fits (decisions 12.3).
 */
export function judgeHold(items: readonly ReservationItem[], entryOf: (petId: bigint) => HoldableEntry): ReservationRefusal | undefined {
  for (const [index, { petId, quantity }] of items.entries()) {
    const entry = entryOf(petId);
    if (!entry) return { kind: 'not_found', index, petId };
    const available = Math.max(0, entry.quantity - entry.reserved);
    if (available < quantity) return { kind: 'insufficient_stock', index, petId, quantity: entry.quantity, reserved: entry.reserved, available };
  }
  return undefined;
}

/**
 * The judgement of an end on the reservation found, its status as it is live (liveStatus, by the
 * clock of the store that keeps it), inside its transaction or after a statement that did not end it.
 */
export function judgeEnd(found: Reservation | undefined, end: ReservationEnd): 'apply' | Exclude<EndOutcome, { kind: 'ended' }> {
  if (!found) return { kind: 'not_found' };
  if (found.status === 'active') return 'apply';
  if (found.status === END_STATUS[end]) return { kind: 'already', reservation: found };
  return { kind: 'not_active', reservation: found };
}

/** A reservation's status as it is at `now`: an active one past its expiry holds nothing from that instant, marked or not (decisions 12.4). */
export function liveStatus(reservation: Pick<Reservation, 'status' | 'expiresAt'>, now: Date): ReservationStatus {
  return reservation.status === 'active' && reservation.expiresAt.getTime() <= now.getTime() ? 'expired' : reservation.status;
}

/** A page of reservations, newest first, as GET /v1/reservations and `reservations list` ask for it. */
export interface ReservationQuery {
  status?: ReservationStatus | undefined;
  petId?: bigint | undefined;
  limit: number;
  /** Older than this reservation's place (its cursor); undefined: from the newest. */
  before?: bigint | undefined;
}

/** A reservation with its place in the list (the cursor of the next page). */
export interface ListedReservation {
  reservation: Reservation;
  place: bigint;
}

/** Cursors are opaque to clients: a prefix and the last place, as the history's are, so they can change form later. */
const CURSOR = /^r([1-9][0-9]{0,18})$/;

/** The place a cursor names; undefined for anything never issued (19 digits can exceed an int64 place, which the store could not bind). */
export function parseReservationCursor(cursor: string): bigint | undefined {
  const match = CURSOR.exec(cursor);
  const place = match ? BigInt(match[1]!) : undefined;
  return place !== undefined && place <= INT64_MAX ? place : undefined;
}

/** A page out of rows read with one more than `limit` (that row tells whether an older page follows): its reservations and the next page's cursor. */
export function reservationPageOf(rows: readonly ListedReservation[], limit: number): { reservations: Reservation[]; nextCursor: string | null } {
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return { reservations: page.map((l) => l.reservation), nextCursor: rows.length > limit && last ? `r${last.place}` : null };
}

/** The most reservations one sweep marks in one transaction: a sweep that marks this many runs again at once for the rest. */
export const EXPIRE_BATCH = 100;

/** The stored outcome of a creation (for Idempotency-Key replays): JSON, petIds as strings. */
export function encodeReservationOutcome(outcome: ReservationOutcome): string {
  if (outcome.kind !== 'created') return JSON.stringify({ ...outcome, petId: outcome.petId.toString() });
  const r = outcome.reservation;
  return JSON.stringify({
    kind: 'created',
    reservation: { ...r, items: r.items.map((i) => ({ petId: i.petId.toString(), quantity: i.quantity })) },
  });
}

export function decodeReservationOutcome(text: string): ReservationOutcome {
  const stored = JSON.parse(text) as Record<string, unknown> & { kind: ReservationOutcome['kind'] };
  if (stored.kind !== 'created') return { ...(stored as unknown as ReservationRefusal), petId: BigInt(stored['petId'] as string) };
  const r = stored['reservation'] as Omit<Reservation, 'items' | 'createdAt' | 'expiresAt' | 'endedAt'> & {
    items: { petId: string; quantity: number }[];
    createdAt: string;
    expiresAt: string;
    endedAt: string | null;
  };
  return {
    kind: 'created',
    reservation: {
      ...r,
      items: r.items.map((i) => ({ petId: BigInt(i.petId), quantity: i.quantity })),
      createdAt: new Date(r.createdAt),
      expiresAt: new Date(r.expiresAt),
      endedAt: r.endedAt === null ? null : new Date(r.endedAt),
    },
  };
}

/** A creation's stored outcome, replayed. */
export function replayReservationOutcome(text: string): ReservationResult {
  return { ...decodeReservationOutcome(text), replayed: true };
}

/** What a reservation event's payload column keeps: the parts of its data beyond the columns every event has. */
export function reservationPayload(r: Pick<Reservation, 'id' | 'items' | 'reference' | 'expiresAt'>): string {
  return JSON.stringify({
    reservationId: r.id,
    items: r.items.map((i) => [i.petId.toString(), i.quantity]),
    reference: r.reference,
    expiresAt: r.expiresAt.getTime(),
  });
}

export function parseReservationPayload(text: string): Pick<Reservation, 'items' | 'reference' | 'expiresAt'> & { reservationId: string } {
  const p = JSON.parse(text) as { reservationId: string; items: [string, number][]; reference: string | null; expiresAt: number };
  return { reservationId: p.reservationId, items: p.items.map(([petId, quantity]) => ({ petId: BigInt(petId), quantity })), reference: p.reference, expiresAt: new Date(p.expiresAt) };
}

