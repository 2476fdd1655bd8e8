import type { NewEvent } from '../../domain/event.js';
import { EVENT_COLUMNS, eventColumns, eventValues, type FactsSql, type KindsSql } from '../write-kinds-sql.js';

/**
 * What a write of entries records on PostgreSQL, for every write (the group commit's changes, a
 * ChangeBatch, the CLI's add, adjust and remove, the first run, an import), as the domain table
 * of write kinds says (domain/write-kinds.ts): history rows, events, and last the store version.
 * A write here is one statement (or ends with one) for one round trip and one commit, so these
 * are the parts its CTEs are made of, not statements of their own.
 *
 * Every write bumps store_state last, as the last lock it takes: rows are locked first (in petId
 * order), so writers of several instances never deadlock. Its events take their seqs from
 * store_state.events_head in that same update: the row lock is held until commit, and a
 * transaction is visible before its locks are released, so the next writer takes its seqs only
 * once these are visible. Seqs are handed out in commit (and visibility) order: no reader can see
 * seq n+1 before n (decisions 5.10). The NOTIFY of the event log goes with that update, so it is
 * sent only by a write that bumped, and delivered at commit.
 */

/** What a write's bump of store_state does to the event log: how many events it appends (SQL), and the NOTIFY channel's parameter. */
export interface AppendedSql {
  count: string;
  notify: string;
}

/**
 * The update of store_state that ends every write (a CTE's statement): the store version, and with
 * `appended` the events head and the NOTIFY, returning version and events_head. `when`: only if it
 * holds (a batch that applied something); `reload`: readers of changesSince read the whole list.
 */
export function bumpStoreState(appended: AppendedSql | undefined, options: { when?: string; reload?: boolean } = {}): string {
  const set = ['version = version + 1', ...(options.reload ? ['reload_from = version + 1'] : []), ...(appended ? [`events_head = events_head + ${appended.count}`] : [])];
  const returning = appended ? `version, events_head, pg_notify(${appended.notify}, events_head::text)` : 'version';
  return `UPDATE store_state SET ${set.join(', ')} WHERE id = 1${options.when ? ` AND ${options.when}` : ''} RETURNING ${returning}`;
}

/**
 * The one insert of events: those of the rows of `from` (a FROM clause, with its WHERE), each of
 * its kind, numbered by `seq` from the events head the bump of store_state returned.
 */
export function appendEvents(seq: string, kinds: KindsSql, facts: FactsSql, from: string): string {
  return `INSERT INTO inventory_events (seq, ${EVENT_COLUMNS.join(', ')}) SELECT ${seq}, ${eventValues(kinds, facts)} FROM ${from}`;
}

/** The insert of history rows, one per change of count, from a SELECT of its columns. */
export function insertHistory(select: string): string {
  return `INSERT INTO inventory_history (pet_id, previous_quantity, quantity, at, key_id, key_name, request_id, reason) ${select}`;
}

/** A reservation's event (decisions 12.6) as SQL of one statement: its type, status, time, payload and who made it. */
export interface ReservationEventSql {
  type: string;
  at: string;
  status: string;
  /** JSON text of domain reservationPayload: the reservation's id, items, reference and expiry. */
  payload: string;
  source: string;
  keyId: string;
  requestId: string;
}

/**
 * The insert of reservations' events, one per row of `from`, numbered by `seq`: the one insert of
 * events that names no entry of its own (its pets are in its payload), beside appendEvents.
 */
export function appendReservationEvents(seq: string, e: ReservationEventSql, from: string): string {
  const values = [seq, e.type, e.at, 'NULL', e.status, 'NULL', 'NULL', 'NULL', 'NULL', e.source, e.keyId, e.requestId, e.payload];
  return `INSERT INTO inventory_events (seq, ${EVENT_COLUMNS.join(', ')}) SELECT ${values.join(', ')} FROM ${from}`;
}

/**
 * The payload of a reservation's event (domain reservationPayload) made in SQL from a reservations
 * row `r` and its items `items` (pet_id, quantity, position): the same JSON, key for key.
 */
export function reservationPayloadSql(r: string, items: string): string {
  return `json_build_object('reservationId', ${r}.id,
            'items', (SELECT json_agg(json_build_array(x.pet_id::text, x.quantity) ORDER BY x.position) FROM ${items} x WHERE x.place = ${r}.place),
            'reference', ${r}.reference, 'expiresAt', (extract(epoch FROM ${r}.expires_at) * 1000)::bigint)::text`;
}

/** The columns of events given as arrays (eventArrays): every one but occurred_at, which their write gives them all alike. */
const ARRAY_COLUMNS = EVENT_COLUMNS.filter((c) => c !== 'occurred_at');
/** Each array's element type, as the parameter is cast. */
const ARRAY_TYPES: Record<(typeof ARRAY_COLUMNS)[number], string> = {
  type: 'text',
  pet_id: 'bigint',
  status: 'text',
  previous_quantity: 'int',
  quantity: 'int',
  version: 'bigint',
  reason: 'text',
  source: 'text',
  key_id: 'text',
  request_id: 'text',
  payload: 'text',
};

/** How many events eventArrays passes from parameter $`first` on: the count a bump of store_state appends. */
export function eventArraysCount(first: number): string {
  return `cardinality($${first}::text[])`;
}

/**
 * The insert of events a write made in JavaScript (a group of reservation writes, judged on the rows
 * it holds), passed by eventArrays as parameters $`first` onwards: in the order given, numbered up
 * to `head` (the events head the bump of store_state in `from` returned), each at `at`.
 */
export function appendEventArrays(first: number, at: string, head: string, from: string): string {
  const params = ARRAY_COLUMNS.map((c, i) => `$${first + i}::${ARRAY_TYPES[c]}[]`);
  const values = EVENT_COLUMNS.map((c) => (c === 'occurred_at' ? at : `t.${c}`));
  return `INSERT INTO inventory_events (seq, ${EVENT_COLUMNS.join(', ')})
    SELECT ${head} - ${eventArraysCount(first)} + t.n, ${values.join(', ')}
    FROM ${from}, unnest(${params.join(', ')}) WITH ORDINALITY AS t(${ARRAY_COLUMNS.join(', ')}, n)`;
}

/** The parameters appendEventArrays reads: one array per column but occurred_at, in EVENT_COLUMNS' order. */
export function eventArrays(events: readonly NewEvent[]): unknown[][] {
  const rows = events.map(eventColumns);
  return EVENT_COLUMNS.flatMap((c, i) => {
    if (c === 'occurred_at') return [];
    // A bigint petId crosses as its digits: pg binds a bigint[] element from a string.
    return [rows.map((row) => (typeof row[i] === 'bigint' ? row[i].toString() : (row[i] ?? null)))];
  });
}
