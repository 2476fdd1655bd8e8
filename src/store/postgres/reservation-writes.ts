import type { Statement } from './connection.js';
import { appendReservationEvents, bumpStoreState, reservationPayloadSql } from './change-log.js';
import { lapsedHold } from './reservation-rows.js';

/**
 * The PostgreSQL store's sweep of lapsed reservations, one statement (one round trip, one commit);
 * creations and ends are reservation-group.ts's. Locks are taken in the order every write takes
 * them: a reservation's row, then the entries in petId order, store_state last (change-log.ts), so
 * the sweep never deadlocks with changes of counts or with reservation writes. Times are the
 * server's clock (now(), to the millisecond as the API shows them), so every instance judges an
 * expiry alike.
 */

/** The times a reservation keeps: the server's, cut to the millisecond (a Date's precision). */
const NOW = "date_trunc('milliseconds', now())";

/** The payload of the reservation r whose items are the rows of `items` (place, pet_id, quantity, position). */
const payload = (items: string) => reservationPayloadSql('r', items);

/**
 * Marks expired up to $1 active reservations past their expiry (oldest expiry first), each exactly
 * once: a reservation another sweep (or an end) holds is skipped, and one no longer active is not
 * found. Their holds go back and each appends its event (source expiry), the store version last.
 * $2 the NOTIFY channel. One row per reservation marked.
 */
export const EXPIRE_DUE: Statement = {
  name: 'reservation-expire',
  text: `WITH due AS (SELECT place FROM reservations WHERE ${lapsedHold('reservations')} ORDER BY expires_at, place LIMIT $1 FOR UPDATE SKIP LOCKED),
         r AS (UPDATE reservations SET status = 'expired', ended_at = ${NOW} FROM due WHERE reservations.place = due.place
               RETURNING reservations.place, reservations.id, reservations.reference, reservations.created_at, reservations.expires_at, reservations.ended_at),
         it AS (SELECT ri.place, ri.pet_id, ri.quantity, ri.position FROM reservation_items ri JOIN r ON ri.place = r.place),
         cur AS (SELECT pet_id FROM inventory WHERE pet_id IN (SELECT pet_id FROM it) ORDER BY pet_id FOR UPDATE),
         bump AS (${bumpStoreState({ count: '(SELECT count(*) FROM r)', notify: '$2' }, { when: 'EXISTS (SELECT 1 FROM r) AND (SELECT count(*) FROM cur) >= 0' })}),
         rev AS (${appendReservationEvents(
           'bump.events_head - (SELECT count(*) FROM r) + row_number() OVER (ORDER BY r.place)',
           { type: "'reservation.expired'", at: 'r.ended_at', status: "'expired'", payload: payload('it'), source: "'expiry'", keyId: 'NULL', requestId: 'NULL' },
           'bump, r',
         )}),
         upd AS (UPDATE inventory i SET reserved = greatest(i.reserved - s.quantity, 0), change_seq = bump.version
                 FROM (SELECT pet_id, sum(quantity) AS quantity FROM it GROUP BY pet_id) s, bump WHERE i.pet_id = s.pet_id RETURNING 1)
    SELECT r.id, 'expired' AS status, r.reference, r.created_at AS "createdAt", r.expires_at AS "expiresAt", r.ended_at AS "endedAt",
           (SELECT json_agg(json_build_array(it.pet_id::text, it.quantity) ORDER BY it.position) FROM it WHERE it.place = r.place)::text AS items,
           (SELECT count(*) FROM upd) AS held
    FROM r ORDER BY r.place`,
};
