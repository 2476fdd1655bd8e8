import type { ChangeReason, PetStatus } from '../schemas/inventory.js';
import type { EventSource, StockEvent, StockEventType } from './event.js';

/**
 * What one kind of write of an entry records (decisions 5.4, 5.8, 5.9): the event it appends,
 * whether it is written at all and with a history row, and where each value of its event comes
 * from. Every write also gives the entry a new version, which its event carries, and bumps the
 * store version last. Each backend records every write through one module (its change-log.ts),
 * reading this table: in code (eventOf) or in the SQL made from it (store/write-kinds-sql.ts).
 */
export interface WriteRecord {
  /** The type of the event it appends. */
  event: StockEventType;
  /** The no-op rule: written always, or (a stocktake restates every count) only when the count it sets differs from the one held. */
  writes: 'always' | 'when the count differs';
  /** Whether it writes a row of the entry's history. */
  history: boolean;
  /** The event's previousQuantity: the count the entry held before the write, or none. */
  previousQuantity: 'before' | null;
  /** The event's quantity: the count the entry holds after it, or none. */
  quantity: 'after' | null;
  /** The event's reason: the one sent with the change, a fixed one, or none. */
  reason: 'given' | ChangeReason | null;
  /** Whose write the event says it is: the change's origin tells (the API's or the CLI's), or always the CLI's. */
  source: 'origin' | EventSource;
}

/** Every kind of write of an entry, and what it records. */
export const WRITE_KINDS = {
  /** An entry created or revived (pets add, pets import, the first run's demo pets): a revival has no previous quantity either. */
  created: { event: 'inventory.created', writes: 'always', history: false, previousQuantity: null, quantity: 'after', reason: null, source: 'cli' },
  /** A count set or moved by a delta (PATCH, an adjustment, a batch's change, pets adjust): even to the count held (decisions 5.4). */
  updated: { event: 'inventory.updated', writes: 'always', history: true, previousQuantity: 'before', quantity: 'after', reason: 'given', source: 'origin' },
  /** A stocktake's count (pets import --upsert). */
  imported: {
    event: 'inventory.updated',
    writes: 'when the count differs',
    history: true,
    previousQuantity: 'before',
    quantity: 'after',
    reason: 'correction',
    source: 'cli',
  },
  /** An entry retired (pets remove): the event keeps the status and the count it had. */
  deleted: { event: 'inventory.deleted', writes: 'always', history: false, previousQuantity: 'before', quantity: null, reason: null, source: 'cli' },
} as const satisfies Record<string, WriteRecord>;

export type WriteKind = keyof typeof WRITE_KINDS;

/**
 * The no-op rule: whether a write of `kind` that sets `quantity` on an entry holding `current` is
 * written (a history row where the kind has one, a new version, an event). The imports apply it in
 * SQL made from this table (writesChangeSql); the store contract suite holds them to this function.
 */
export function writesChange(kind: WriteKind, current: number, quantity: number): boolean {
  return WRITE_KINDS[kind].writes === 'always' || current !== quantity;
}

/** Who made a change, as its event may carry it. */
export interface EventOrigin {
  source: EventSource;
  keyId: string;
  requestId: string;
}

/** What one write did to one entry, that its event is made of. */
export interface WriteFacts {
  petId: bigint;
  /** The entry's status after the write (a retired entry: the one it had). */
  status: PetStatus;
  /** The count it held before the write; null for a new entry. */
  before: number | null;
  /** The count it holds after the write (a retired entry: the one it kept). */
  after: number;
  /** The entry's version after the write. */
  version: number;
  at: Date;
  /** The reason sent with the change: for a kind whose event takes it. */
  reason?: ChangeReason | null;
  /** Who made it: for a kind whose event takes its source from the change. */
  origin?: EventOrigin;
}

/** The event a write of `kind` appends, as WRITE_KINDS says; a CLI's event carries no key nor request id (decisions 5.9). */
export function eventOf(kind: WriteKind, facts: WriteFacts): Omit<StockEvent, 'seq'> {
  const record: WriteRecord = WRITE_KINDS[kind];
  const origin = record.source === 'origin' ? given(facts.origin, kind, 'origin') : undefined;
  const source = origin ? origin.source : (record.source as EventSource);
  const byApi = source === 'api' && origin !== undefined;
  return {
    type: record.event,
    occurredAt: facts.at,
    petId: facts.petId,
    status: facts.status,
    previousQuantity: record.previousQuantity === 'before' ? given(facts.before, kind, 'before') : null,
    quantity: record.quantity === 'after' ? facts.after : null,
    version: facts.version,
    reason: record.reason === 'given' ? given(facts.reason, kind, 'reason') : record.reason,
    source,
    keyId: byApi ? origin.keyId : null,
    requestId: byApi ? origin.requestId : null,
  };
}

/** A fact the kind's event needs; a caller that leaves it out is a bug. */
function given<T>(value: T | undefined, kind: WriteKind, fact: string): T {
  if (value === undefined) throw new Error(`an event of a write of kind ${kind} needs its ${fact}`);
  return value;
}
