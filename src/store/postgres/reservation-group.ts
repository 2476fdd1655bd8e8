import type { NewEvent } from '../../domain/event.js';
import type { ChangeOrigin } from '../../domain/inventory.js';
import { END_STATUS, judgeEnd, judgeHold, type NewReservation, type Reservation, type ReservationEnd, type ReservationWrite, type ReservationWriteResult } from '../../domain/reservation.js';
import { reservationEvent } from '../../domain/reservation-events.js';
import { eventOf } from '../../domain/write-kinds.js';
import type { PetStatus } from '../../schemas/inventory.js';
import type { Query } from './apply-batch.js';
import { appendEventArrays, bumpStoreState, eventArrays, eventArraysCount, insertHistory } from './change-log.js';
import type { Statement } from './connection.js';
import { lapsedHold, RESERVATION_COLUMNS, toReservation, type ReservationRow } from './reservation-rows.js';

/** A write's answer; undefined for a creation that lapsed holds may have refused, which runs again alone once the group has committed. */
export type GroupAnswer = ReservationWriteResult | undefined;

/**
 * The group's first statement: the instant every write of the group is judged and stamped at (the
 * transaction's, to the millisecond, as a statement's own writes take it), and the reservations
 * it ends ($1 ids), locked by place as each end locks its own first, with their items.
 */
const LOCK_ENDS: Statement = {
  name: 'reservation-group-ends',
  text: `WITH r AS (SELECT * FROM reservations WHERE id = ANY($1::text[]) ORDER BY place FOR UPDATE)
    SELECT date_trunc('milliseconds', now()) AS now, ${RESERVATION_COLUMNS} FROM (SELECT 1) one LEFT JOIN r ON true`,
};

/**
 * The second: every entry the group's writes name ($1 petIds), locked in petId order, with what
 * holds past their expiry still hold of each (a creation they refuse runs again alone, after the
 * sweep has marked them: decisions 12.4).
 */
const LOCK_ENTRIES: Statement = {
  name: 'reservation-group-entries',
  text: `SELECT i.pet_id::text AS "petId", i.quantity, i.reserved, i.status, i.version, i.retired_at IS NULL AS live,
           (SELECT coalesce(sum(ri.quantity), 0) FROM reservations lr JOIN reservation_items ri ON ri.place = lr.place
            WHERE ${lapsedHold('lr')} AND ri.pet_id = i.pet_id)::int AS lapsed
    FROM inventory i WHERE i.pet_id = ANY($1::bigint[]) ORDER BY i.pet_id FOR UPDATE`,
};

/** Where WRITE_GROUP's events start among its parameters: eleven arrays (change-log.ts, eventArrays), the NOTIFY channel after. */
const EVENTS_FROM = 24;

/**
 * The last: everything the group's writes judged, written at once, every row it changes already
 * locked by the two before, store_state last: the new reservations and their items, the ends'
 * statuses, the entries as the writes left them, a history row per sale, and the events in the
 * order the writes made them, their seqs after the events head. $1 the group's instant.
 */
const WRITE_GROUP: Statement = {
  name: 'reservation-group-write',
  text: `WITH nr AS (INSERT INTO reservations (id, status, reference, created_at, expires_at, key_id, request_id)
                SELECT t.id, 'active', t.reference, $1, t.expires_at, t.key_id, t.request_id
                FROM unnest($2::text[], $3::text[], $4::timestamptz[], $5::text[], $6::text[]) WITH ORDINALITY AS t(id, reference, expires_at, key_id, request_id, n)
                ORDER BY t.n RETURNING place, id),
         ni AS (INSERT INTO reservation_items (place, position, pet_id, quantity)
                SELECT nr.place, t.position, t.pet_id, t.quantity FROM unnest($7::text[], $8::int[], $9::bigint[], $10::int[]) AS t(id, position, pet_id, quantity)
                JOIN nr ON nr.id = t.id),
         er AS (UPDATE reservations r SET status = t.status, ended_at = $1 FROM unnest($11::bigint[], $12::text[]) AS t(place, status) WHERE r.place = t.place),
         h AS (${insertHistory(`SELECT t.pet_id, t.previous, t.quantity, $1, t.key_id, t.key_name, t.request_id, 'sold'
                FROM unnest($13::bigint[], $14::int[], $15::int[], $16::text[], $17::text[], $18::text[]) WITH ORDINALITY AS t(pet_id, previous, quantity, key_id, key_name, request_id, n)
                ORDER BY t.n`)}),
         bump AS (${bumpStoreState({ count: eventArraysCount(EVENTS_FROM), notify: '$35' })}),
         ev AS (${appendEventArrays(EVENTS_FROM, '$1', 'bump.events_head', 'bump')})
    UPDATE inventory i SET reserved = t.reserved, quantity = t.quantity, version = t.version, updated_at = CASE WHEN t.sold THEN $1 ELSE i.updated_at END,
           change_seq = bump.version
    FROM unnest($19::bigint[], $20::int[], $21::int[], $22::bigint[], $23::boolean[]) AS t(pet_id, reserved, quantity, version, sold), bump
    WHERE i.pet_id = t.pet_id`,
};

/** A reservation the group ends, locked; all null but `now` when the group ends none. */
type EndRow = { now: Date } & (ReservationRow | { id: null });

interface EntryRow {
  petId: string;
  quantity: number;
  reserved: number;
  status: PetStatus;
  version: bigint;
  live: boolean;
  lapsed: number;
}

/** An entry as the group's writes leave it, one after the other. */
interface Entry {
  quantity: number;
  reserved: number;
  status: PetStatus;
  version: number;
  live: boolean;
  lapsed: number;
  /** Written by a write of the group: only these rows are updated (and named by the store version). */
  touched: boolean;
  sold: boolean;
}

/** What the group will write, filled as each write is judged. */
class Writes {
  readonly made: { reservation: Reservation; keyId: string | null; requestId: string | null }[] = [];
  readonly ended: { place: bigint; status: Reservation['status'] }[] = [];
  readonly sales: { petId: bigint; previous: number; quantity: number; origin: ChangeOrigin }[] = [];
  readonly events: NewEvent[] = [];
}

/**
 * The creations and ends of a group, judged in JavaScript in arrival order on rows the group holds
 * locked, each on what the ones before it left, as SQLite's group judges them; then written by one
 * statement. Three round trips whatever the group's size, where a statement per write held
 * store_state across all of theirs (decisions 12.7). A write alone is a group of one: one rule for
 * both. `againAfterLapsed`: a creation refused where holds past their expiry may stand in its way
 * answers undefined, to be judged again once the sweep has marked them; otherwise it is refused.
 */
export async function applyReservationGroup(q: Query, ops: readonly ReservationWrite[], channel: string, againAfterLapsed: boolean): Promise<GroupAnswer[]> {
  const endRows = (await q<EndRow>(LOCK_ENDS, [ops.flatMap((op) => ('end' in op ? [op.end.id] : []))])).rows;
  const now = endRows[0]!.now;
  const found = new Map<string, { place: bigint; reservation: Reservation }>();
  for (const row of endRows) if (row.id !== null) found.set(row.id, { place: row.place, reservation: toReservation(row) });
  const pets = new Set<string>();
  for (const op of ops) for (const item of 'end' in op ? (found.get(op.end.id)?.reservation.items ?? []) : op.reserve.items) pets.add(item.petId.toString());
  const entries = new Map<bigint, Entry>();
  for (const r of (await q<EntryRow>(LOCK_ENTRIES, [[...pets]])).rows) {
    entries.set(BigInt(r.petId), { quantity: r.quantity, reserved: r.reserved, status: r.status, version: Number(r.version), live: r.live, lapsed: r.lapsed, touched: false, sold: false });
  }
  const writes = new Writes();
  const answers = ops.map((op): GroupAnswer => ('end' in op ? end(op.end, found, entries, now, writes) : create(op.reserve, entries, now, writes, againAfterLapsed)));
  if (writes.events.length > 0) await q(WRITE_GROUP, writeValues(writes, entries, now, channel));
  return answers;
}

function create(r: NewReservation, entries: Map<bigint, Entry>, now: Date, writes: Writes, againAfterLapsed: boolean): GroupAnswer {
  const refusal = judgeHold(r.items, (petId) => {
    const entry = entries.get(petId);
    return entry?.live ? entry : undefined;
  });
  if (againAfterLapsed && refusal?.kind === 'insufficient_stock' && entries.get(refusal.petId)!.lapsed > 0) return undefined;
  if (refusal) return { ...refusal, replayed: false };
  for (const item of r.items) {
    const entry = entries.get(item.petId)!;
    entry.reserved += item.quantity;
    entry.touched = true;
  }
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
  writes.made.push({ reservation, keyId: byApi ? r.origin.keyId : null, requestId: byApi ? r.origin.requestId : null });
  writes.events.push(reservationEvent(reservation, now, r.origin));
  return { kind: 'created', reservation, replayed: false };
}

function end(
  { id, how, origin }: { id: string; how: ReservationEnd; origin: ChangeOrigin },
  found: Map<string, { place: bigint; reservation: Reservation }>,
  entries: Map<bigint, Entry>,
  now: Date,
  writes: Writes,
): GroupAnswer {
  const held = found.get(id);
  const verdict = judgeEnd(held?.reservation, how);
  if (verdict !== 'apply') return verdict;
  const { place, reservation } = held!;
  const status = END_STATUS[how];
  for (const item of reservation.items) {
    const entry = entries.get(item.petId)!;
    // A count taken below what was held (decisions 12.3) leaves reserved above quantity: never below 0 either.
    entry.reserved = Math.max(0, entry.reserved - item.quantity);
    entry.touched = true;
    // An entry retired since it was held has no count to sell from.
    if (status !== 'committed' || !entry.live) continue;
    const previous = entry.quantity;
    entry.quantity = Math.max(0, previous - item.quantity);
    entry.version += 1;
    entry.sold = true;
    writes.sales.push({ petId: item.petId, previous, quantity: entry.quantity, origin });
    writes.events.push(
      eventOf('updated', { petId: item.petId, status: entry.status, before: previous, after: entry.quantity, version: entry.version, at: now, reason: 'sold', origin }),
    );
  }
  const ended: Reservation = { ...reservation, status, endedAt: now };
  // A later write of the same group finds it ended.
  found.set(id, { place, reservation: ended });
  writes.ended.push({ place, status });
  writes.events.push(reservationEvent(ended, now, origin));
  return { kind: 'ended', reservation: ended };
}

/** WRITE_GROUP's parameters: columns of what the writes made, and every entry locked, as they left it. */
function writeValues(w: Writes, entries: Map<bigint, Entry>, now: Date, channel: string): unknown[] {
  const items = w.made.flatMap(({ reservation }) => reservation.items.map((item, position) => ({ id: reservation.id, position, item })));
  const pets = [...entries].filter(([, e]) => e.touched);
  return [
    now,
    w.made.map((m) => m.reservation.id),
    w.made.map((m) => m.reservation.reference),
    w.made.map((m) => m.reservation.expiresAt),
    w.made.map((m) => m.keyId),
    w.made.map((m) => m.requestId),
    items.map((i) => i.id),
    items.map((i) => i.position),
    items.map((i) => i.item.petId.toString()),
    items.map((i) => i.item.quantity),
    w.ended.map((e) => e.place.toString()),
    w.ended.map((e) => e.status),
    w.sales.map((s) => s.petId.toString()),
    w.sales.map((s) => s.previous),
    w.sales.map((s) => s.quantity),
    w.sales.map((s) => s.origin.keyId),
    w.sales.map((s) => s.origin.keyName),
    w.sales.map((s) => s.origin.requestId),
    pets.map(([petId]) => petId.toString()),
    pets.map(([, e]) => e.reserved),
    pets.map(([, e]) => e.quantity),
    pets.map(([, e]) => e.version),
    pets.map(([, e]) => e.sold),
    ...eventArrays(w.events),
    channel,
  ];
}
