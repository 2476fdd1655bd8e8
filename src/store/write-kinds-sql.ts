import { WRITE_KINDS, type WriteKind, type WriteRecord } from '../domain/write-kinds.js';
import type { NewEvent } from '../domain/event.js';
import { payloadOf } from '../domain/reservation-events.js';

/**
 * The domain table of write kinds (domain/write-kinds.ts) as SQL, for the statements that record
 * many writes at once (PostgreSQL's batches, both imports): made here from the table, once, in
 * SQL both databases read the same, so a rule changed there changes every statement.
 * test/store/write-rules.test.ts holds what the statements write to the domain functions.
 */

/** The columns of inventory_events after seq, in the order eventValues gives them. */
export const EVENT_COLUMNS = [
  'type',
  'occurred_at',
  'pet_id',
  'status',
  'previous_quantity',
  'quantity',
  'version',
  'reason',
  'source',
  'key_id',
  'request_id',
  'payload',
] as const;

/**
 * A new event's columns after its seq, in EVENT_COLUMNS' order: an entry's, or a reservation's (no
 * pet of its own: they are in its payload). Its time as a Date; a backend keeps it its own way.
 */
export function eventColumns(e: NewEvent): unknown[] {
  if ('reservationId' in e) return [e.type, e.occurredAt, null, e.status, null, null, null, null, e.source, e.keyId, e.requestId, payloadOf(e)];
  return [e.type, e.occurredAt, e.petId, e.status, e.previousQuantity, e.quantity, e.version, e.reason, e.source, e.keyId, e.requestId, null];
}

/** A write's facts (domain WriteFacts) as SQL expressions of one statement; the change's reason and origin where a kind's event takes them. */
export interface FactsSql {
  at: string;
  petId: string;
  status: string;
  /** The count held before: for a kind whose event has it. */
  before?: string;
  after: string;
  version: string;
  reason?: string;
  /** The change's source, 'api' or 'cli'. */
  source?: string;
  keyId?: string;
  requestId?: string;
}

/** Rows of one kind; or of two, each row of `kind` where `when` holds, else of `otherwise`. */
export type KindsSql = WriteKind | { when: string; kind: WriteKind; otherwise: WriteKind };

type EventColumn = (typeof EVENT_COLUMNS)[number];

/** The values of an event after its seq, in EVENT_COLUMNS' order, for rows of `kinds` (domain eventOf in SQL). */
export function eventValues(kinds: KindsSql, facts: FactsSql): string {
  return EVENT_COLUMNS.map((column) => eventValue(kinds, column, facts)).join(', ');
}

/** One column of eventValues. */
function eventValue(kinds: KindsSql, column: EventColumn, facts: FactsSql): string {
  if (typeof kinds === 'string') return columnSql(kinds, column, facts);
  const [then, otherwise] = [columnSql(kinds.kind, column, facts), columnSql(kinds.otherwise, column, facts)];
  return then === otherwise ? then : `CASE WHEN ${kinds.when} THEN ${then} ELSE ${otherwise} END`;
}

/** The reason a write of `kind` records (in its event and its history row): `given`, the change's, where the kind takes it. */
export function reasonSql(kind: WriteKind, given?: string): string {
  const { reason } = WRITE_KINDS[kind] as WriteRecord;
  return reason === 'given' ? needed(given, 'reason') : reason === null ? 'NULL' : literal(reason);
}

/** The no-op rule (domain writesChange) as a condition on a row's count held and count set. */
export function writesChangeSql(kind: WriteKind, current: string, quantity: string): string {
  return WRITE_KINDS[kind].writes === 'always' ? 'TRUE' : `${current} <> ${quantity}`;
}

function columnSql(kind: WriteKind, column: EventColumn, facts: FactsSql): string {
  const record: WriteRecord = WRITE_KINDS[kind];
  switch (column) {
    case 'type':
      return literal(record.event);
    case 'occurred_at':
      return facts.at;
    case 'pet_id':
      return facts.petId;
    case 'status':
      return facts.status;
    case 'previous_quantity':
      return record.previousQuantity === 'before' ? needed(facts.before, 'before') : 'NULL';
    case 'quantity':
      return record.quantity === 'after' ? facts.after : 'NULL';
    case 'version':
      return facts.version;
    case 'reason':
      return reasonSql(kind, facts.reason);
    case 'source':
      return record.source === 'origin' ? needed(facts.source, 'source') : literal(record.source);
    case 'key_id':
      return byApi(record, facts, facts.keyId, 'keyId');
    case 'request_id':
      return byApi(record, facts, facts.requestId, 'requestId');
    case 'payload':
      // Only a reservation's event has one (decisions 12.6); no write of an entry's kinds is one.
      return 'NULL';
  }
}

/** A key or request id: the change's for the API's writes, none for the CLI's (decisions 5.9). */
function byApi(record: WriteRecord, facts: FactsSql, value: string | undefined, fact: string): string {
  if (record.source === 'origin') return `CASE WHEN ${needed(facts.source, 'source')} = 'api' THEN ${needed(value, fact)} END`;
  return 'NULL';
}

/** A word of the table as an SQL string (event types, reasons and sources are plain words). */
function literal(word: string): string {
  if (!/^[a-z][a-z._]*$/.test(word)) throw new Error(`not a plain word: ${word}`);
  return `'${word}'`;
}

/** A fact the kind's event needs; a statement that leaves it out is a bug. */
function needed(sql: string | undefined, fact: string): string {
  if (sql === undefined) throw new Error(`this kind of write needs its ${fact}: give it as SQL`);
  return sql;
}
