import type { Statement } from './connection.js';
import { appendEvents, appendReservationEvents, bumpStoreState, insertHistory, reservationPayloadSql } from './change-log.js';

/**
 * The PostgreSQL store's writes of reservations, each one statement (one round trip, one commit).
 * Locks are taken in the order every write takes them: a reservation's row, then the entries in
 * petId order, store_state last (change-log.ts), so they never deadlock with changes of counts or
 * with each other. Times are the server's clock (now(), to the millisecond as the API shows them),
 * so every instance judges an expiry alike.
 */

/** The times a reservation keeps: the server's, cut to the millisecond (a Date's precision). */
const NOW = "date_trunc('milliseconds', now())";

/** The payload of the reservation r whose items are the rows of `items` (place, pet_id, quantity, position). */
const payload = (items: string) => reservationPayloadSql('r', items);

/**
 * Holds every item ($1 petIds, $2 quantities, in the order asked) or none: each entry's row is
 * locked, judged on quantity - reserved, and only when every item fits are the reservation, its
 * items, the holds, its event and the store version written. One row per item, in order: what it
 * found (found, quantity, reserved, and what lapsed holds still hold of it, for the refusal's
 * retry), and the reservation's times when it was made.
 * $3 id, $4 reference, $5 ttl seconds, $6 source, $7 key id, $8 request id, $9 the NOTIFY channel.
 */
export const CREATE_RESERVATION: Statement = {
  name: 'reservation-create',
  text: `WITH c AS (SELECT * FROM unnest($1::bigint[], $2::int[]) WITH ORDINALITY AS c(pet_id, quantity, position)),
         cur AS (SELECT pet_id, quantity, reserved FROM inventory WHERE pet_id = ANY($1::bigint[]) AND retired_at IS NULL ORDER BY pet_id FOR UPDATE),
         j AS (SELECT c.position, c.pet_id, c.quantity AS wanted, cur.quantity, cur.reserved, cur.pet_id IS NOT NULL AS found,
                      coalesce(greatest(cur.quantity - cur.reserved, 0) >= c.quantity, false) AS fits
               FROM c LEFT JOIN cur ON cur.pet_id = c.pet_id),
         r AS (INSERT INTO reservations (id, status, reference, created_at, expires_at, key_id, request_id)
               SELECT $3, 'active', $4, ${NOW}, ${NOW} + make_interval(secs => $5), CASE WHEN $6 = 'api' THEN $7 END, CASE WHEN $6 = 'api' THEN $8 END
               WHERE (SELECT bool_and(fits) FROM j)
               RETURNING place, id, reference, created_at, expires_at),
         items AS (INSERT INTO reservation_items (place, position, pet_id, quantity) SELECT r.place, c.position - 1, c.pet_id, c.quantity FROM r, c
                   RETURNING place, position, pet_id, quantity),
         bump AS (${bumpStoreState({ count: '1', notify: '$9' }, { when: 'EXISTS (SELECT 1 FROM r)' })}),
         ev AS (${appendReservationEvents(
           'bump.events_head',
           {
             type: "'reservation.created'",
             at: 'r.created_at',
             status: "'active'",
             payload: `json_build_object('reservationId', r.id, 'items', (SELECT json_agg(json_build_array(c.pet_id::text, c.quantity) ORDER BY c.position) FROM c),
                        'reference', r.reference, 'expiresAt', (extract(epoch FROM r.expires_at) * 1000)::bigint)::text`,
             source: '$6',
             keyId: "CASE WHEN $6 = 'api' THEN $7 END",
             requestId: "CASE WHEN $6 = 'api' THEN $8 END",
           },
           'bump, r',
         )}),
         upd AS (UPDATE inventory i SET reserved = i.reserved + c.quantity, change_seq = bump.version FROM c, bump WHERE i.pet_id = c.pet_id RETURNING 1)
    SELECT j.position, j.found, j.quantity, j.reserved, (SELECT created_at FROM r) AS "createdAt", (SELECT expires_at FROM r) AS "expiresAt",
           (SELECT count(*) FROM upd) AS held,
           (SELECT coalesce(sum(ri.quantity), 0) FROM reservations lr JOIN reservation_items ri ON ri.place = lr.place
            WHERE lr.status = 'active' AND lr.expires_at <= now() AND ri.pet_id = j.pet_id)::int AS lapsed
    FROM j ORDER BY j.position`,
};

/**
 * Ends the active reservation $1 (not past its expiry) with status $2 (committed or released):
 * every entry it holds is locked, its hold given back, and for a sale its count goes down by what
 * was held (never below 0: decisions 12.3) with a new version, a history row reason sold and an
 * inventory.updated event each, then the reservation's event, the store version last. No row when
 * it was not active: the caller reads it and judges why.
 * $3 source, $4 key id, $5 key name, $6 request id, $7 the NOTIFY channel.
 */
export const END_RESERVATION: Statement = {
  name: 'reservation-end',
  text: `WITH r AS (UPDATE reservations SET status = $2, ended_at = ${NOW} WHERE id = $1 AND status = 'active' AND expires_at > now()
                 RETURNING place, id, status, reference, created_at, expires_at, ended_at),
         it AS (SELECT ri.place, ri.pet_id, ri.quantity, ri.position FROM reservation_items ri JOIN r ON ri.place = r.place),
         cur AS (SELECT pet_id, quantity, status, version, retired_at IS NULL AS live FROM inventory
                 WHERE pet_id IN (SELECT pet_id FROM it) ORDER BY pet_id FOR UPDATE),
         sale AS (SELECT it.position, cur.pet_id, cur.quantity AS previous, greatest(cur.quantity - it.quantity, 0) AS quantity, cur.status,
                         cur.version + 1 AS new_version, r.ended_at AS at
                  FROM it JOIN cur ON cur.pet_id = it.pet_id, r WHERE $2 = 'committed' AND cur.live),
         hist AS (${insertHistory("SELECT pet_id, previous, quantity, at, $4, $5, $6, 'sold' FROM sale ORDER BY position")}),
         bump AS (${bumpStoreState({ count: '(SELECT count(*) FROM sale) + 1', notify: '$7' }, { when: 'EXISTS (SELECT 1 FROM r) AND (SELECT count(*) FROM cur) >= 0' })}),
         ev AS (${appendEvents(
           'bump.events_head - (SELECT count(*) FROM sale) - 1 + row_number() OVER (ORDER BY sale.position)',
           'updated',
           {
             at: 'sale.at',
             petId: 'sale.pet_id',
             status: 'sale.status',
             before: 'sale.previous',
             after: 'sale.quantity',
             version: 'sale.new_version',
             reason: "'sold'",
             source: '$3',
             keyId: '$4',
             requestId: '$6',
           },
           'sale, bump',
         )}),
         rev AS (${appendReservationEvents(
           'bump.events_head',
           {
             type: "CASE WHEN $2 = 'committed' THEN 'reservation.committed' ELSE 'reservation.released' END",
             at: 'r.ended_at',
             status: '$2',
             payload: payload('it'),
             source: '$3',
             keyId: "CASE WHEN $3 = 'api' THEN $4 END",
             requestId: "CASE WHEN $3 = 'api' THEN $6 END",
           },
           'bump, r',
         )}),
         upd AS (UPDATE inventory i SET reserved = greatest(i.reserved - it.quantity, 0), quantity = coalesce(sale.quantity, i.quantity),
                   version = coalesce(sale.new_version, i.version), updated_at = coalesce(sale.at, i.updated_at), change_seq = bump.version
                 FROM it LEFT JOIN sale ON sale.pet_id = it.pet_id, bump WHERE i.pet_id = it.pet_id RETURNING 1)
    SELECT r.id, r.status, r.reference, r.created_at AS "createdAt", r.expires_at AS "expiresAt", r.ended_at AS "endedAt", (SELECT count(*) FROM upd) AS held
    FROM r`,
};

/**
 * Marks expired up to $1 active reservations past their expiry (oldest expiry first), each exactly
 * once: a reservation another sweep (or an end) holds is skipped, and one no longer active is not
 * found. Their holds go back and each appends its event (source expiry), the store version last.
 * $2 the NOTIFY channel. One row per reservation marked.
 */
export const EXPIRE_DUE: Statement = {
  name: 'reservation-expire',
  text: `WITH due AS (SELECT place FROM reservations WHERE status = 'active' AND expires_at <= now() ORDER BY expires_at, place LIMIT $1 FOR UPDATE SKIP LOCKED),
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
