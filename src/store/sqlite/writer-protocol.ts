import type { ChangeBatch, ChangeBatchResult, IdempotencyRequest, QuantityChange, VersionCondition } from '../../domain/inventory.js';
import type { Reservation, ReservationWrite, ReservationWriteResult } from '../../domain/reservation.js';
import type { ChangeReason, PetStatus } from '../../schemas/inventory.js';
import { PET_STATUSES } from '../../schemas/values.js';
import type { BatchOptions, BatchResult, ChangeFailure } from './apply-batch.js';
import type { PositionWrite } from './record-position.js';
import type { DeliveryRow, ProgressWrite } from './record-progress.js';

/** What the writer thread is started with: its database file and how it writes batches. */
export interface WriterData {
  filename: string;
  options: BatchOptions;
}

/**
 * What the main thread asks the writer thread (writer-thread.ts), which answers each request in
 * order: a group commit's batch of changes, a ChangeBatch (all or nothing, apply-change-batch.ts),
 * a webhook endpoint's progress or attempts outside any lease (record-progress.ts), a relay's
 * position (record-position.ts), its durability
 * settings, or to close. A ChangeBatch crosses as it is: structured cloning keeps its bigints and
 * Dates, and a batch is one request, not one per change as a PATCH is. Progress and attempts cross
 * as the rows their statements bind (strings and numbers): made on the main thread, run as they come.
 */
export type WriterRequest =
  | { batch: BatchMessage }
  | { changeBatch: ChangeBatch }
  | { progress: ProgressWrite }
  | { attempts: DeliveryRow[] }
  | { position: PositionWrite }
  | { reservationOps: ReservationWrite[] }
  | { expireDue: true }
  | { durability: true }
  | { close: true };
/**
 * The answer to a batch ({ results }), to a ChangeBatch ({ batchResult }), to progress, attempts or
 * a position ({ recorded }: whether the lease's fence let it through; true for attempts), any of
 * them { failed } when the whole transaction failed, or to a durability request.
 */
export type WriterReply =
  | { results: ResultsMessage }
  | { batchResult: ChangeBatchResult }
  | { recorded: boolean }
  | { failed: ChangeFailure }
  | { reservationAnswers: ReservationWriteResult[] }
  | { expired: Reservation[] }
  | { durability: Record<string, string> };

/**
 * How a batch crosses to the writer thread, and its results back. Why columns: postMessage clones
 * an object field by field; a batch as a few typed arrays and string arrays, and the results as
 * numbers, cost about a third as much per change (measured: 0.9 us against 3.2 us for the round
 * trip of a change), and this runs for every PATCH.
 */
export interface BatchMessage {
  petIds: BigInt64Array;
  // Float64, not Int32: a value the store must refuse (1.5, 2^31) has to reach it unchanged.
  /** Each change's quantity, or its delta where `deltas` says so. */
  quantities: Float64Array;
  /** 1 where the change moves the count by a delta (an adjustment), 0 where it sets it. */
  deltas: Uint8Array;
  /** Date.getTime() of each change. */
  at: Float64Array;
  keyIds: string[];
  keyNames: string[];
  requestIds: string[];
  reasons: (ChangeReason | null)[];
  /** By index, for the changes that carry one (most carry neither). */
  conditions: Record<number, VersionCondition>;
  /** By index, the changes of the CLI (pets adjust): every other is the API's. */
  cli: Record<number, true>;
  idempotency: Record<number, Omit<IdempotencyRequest, 'expiresAt'> & { expiresAt: number }>;
}

export function encodeBatch(changes: readonly QuantityChange[]): BatchMessage {
  const n = changes.length;
  const message: BatchMessage = {
    petIds: new BigInt64Array(n),
    quantities: new Float64Array(n),
    deltas: new Uint8Array(n),
    at: new Float64Array(n),
    // Packed arrays (push, not new Array(n)): postMessage clones a holey one as a sparse object.
    keyIds: [],
    keyNames: [],
    requestIds: [],
    reasons: [],
    conditions: {},
    cli: {},
    idempotency: {},
  };
  // One loop filling every column: TypedArray.from with a mapping function takes V8's slow, generic path.
  for (let i = 0; i < n; i++) {
    const c = changes[i]!;
    message.petIds[i] = c.petId;
    message.quantities[i] = c.delta === undefined ? c.quantity : c.delta;
    message.deltas[i] = c.delta === undefined ? 0 : 1;
    message.at[i] = c.at.getTime();
    message.keyIds.push(c.keyId);
    message.keyNames.push(c.keyName);
    message.requestIds.push(c.requestId);
    message.reasons.push(c.reason);
    if (c.condition) message.conditions[i] = c.condition;
    if (c.source === 'cli') message.cli[i] = true;
    if (c.idempotency) message.idempotency[i] = { ...c.idempotency, expiresAt: c.idempotency.expiresAt.getTime() };
  }
  return message;
}

export function decodeBatch(m: BatchMessage): QuantityChange[] {
  const changes: QuantityChange[] = [];
  for (let i = 0; i < m.petIds.length; i++) {
    const petId = m.petIds[i]!;
    const keyId = m.keyIds[i]!;
    const keyName = m.keyNames[i]!;
    const requestId = m.requestIds[i]!;
    const reason = m.reasons[i]!;
    const at = new Date(m.at[i]!);
    const source = m.cli[i] ? 'cli' : 'api';
    // Two literals, not a spread: each a fixed shape, built without copying properties one by one.
    const change: QuantityChange =
      m.deltas[i] === 1
        ? { petId, delta: m.quantities[i]!, source, keyId, keyName, requestId, reason, at }
        : { petId, quantity: m.quantities[i]!, source, keyId, keyName, requestId, reason, at };
    const condition = m.conditions[i];
    if (condition) change.condition = condition;
    const idem = m.idempotency[i];
    if (idem) change.idempotency = { ...idem, expiresAt: new Date(idem.expiresAt) };
    changes.push(change);
  }
  return changes;
}

/** RESULT_WIDTH numbers per change: kind, replayed, quantity, version, status, reserved (or kind and retryAt); the failures aside, by index. */
export interface ResultsMessage {
  numbers: Float64Array;
  failures: Record<number, ChangeFailure>;
}

const RESULT_WIDTH = 6;
const KINDS = [
  'updated',
  'not_found',
  'precondition_failed',
  'idempotency_key_reused',
  'idempotency_records_full',
  'failed',
  'insufficient_stock',
  'quantity_out_of_range',
] as const;

export function encodeResults(results: readonly BatchResult[]): ResultsMessage {
  const numbers = new Float64Array(results.length * RESULT_WIDTH);
  const failures: Record<number, ChangeFailure> = {};
  results.forEach((r, i) => {
    const at = i * RESULT_WIDTH;
    if ('error' in r) {
      failures[i] = r;
      numbers[at] = KINDS.indexOf('failed');
      return;
    }
    numbers[at] = KINDS.indexOf(r.kind);
    if (r.kind === 'idempotency_key_reused') return;
    if (r.kind === 'idempotency_records_full') {
      numbers[at + 1] = r.retryAt.getTime();
      return;
    }
    numbers[at + 1] = r.replayed ? 1 : 0;
    if (r.kind === 'not_found') return;
    numbers[at + 2] = r.entry.item.quantity;
    numbers[at + 3] = r.entry.version;
    numbers[at + 4] = PET_STATUSES.indexOf(r.entry.item.status);
    numbers[at + 5] = r.entry.item.reserved ?? 0;
  });
  return { numbers, failures };
}

/** The results of `changes` (whose petIds the message leaves out). */
export function decodeResults(m: ResultsMessage, changes: readonly QuantityChange[]): BatchResult[] {
  return changes.map((change, i): BatchResult => {
    const at = i * RESULT_WIDTH;
    const kind = KINDS[m.numbers[at]!]!;
    switch (kind) {
      case 'failed':
        return m.failures[i]!;
      case 'idempotency_key_reused':
        return { kind };
      case 'idempotency_records_full':
        return { kind, retryAt: new Date(m.numbers[at + 1]!) };
      case 'not_found':
        return { kind, replayed: m.numbers[at + 1] === 1 };
      case 'updated':
      case 'precondition_failed':
      case 'insufficient_stock':
      case 'quantity_out_of_range': {
        const status: PetStatus = PET_STATUSES[m.numbers[at + 4]!]!;
        const reserved = m.numbers[at + 5]!;
        const item = reserved === 0 ? { petId: change.petId, quantity: m.numbers[at + 2]!, status } : { petId: change.petId, quantity: m.numbers[at + 2]!, status, reserved };
        const entry = { item, version: m.numbers[at + 3]! };
        return { kind, entry, replayed: m.numbers[at + 1] === 1 };
      }
    }
  });
}
