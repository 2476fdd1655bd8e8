import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type Database from 'better-sqlite3';
import type { ChangeBatch, ChangeBatchResult, QuantityChange } from '../../domain/inventory.js';
import type { Reservation, ReservationWrite, ReservationWriteResult } from '../../domain/reservation.js';
import { StoreUnavailableError } from '../../errors.js';
import { applyBatch, errorOf, type BatchOptions, type BatchResult } from './apply-batch.js';
import { applyChangeBatch } from './apply-change-batch.js';
import { durabilityOf } from './connection.js';
import { recordPosition, type PositionWrite } from './record-position.js';
import { reservationWrites } from './reservation-writes.js';
import { recordAttempts, recordProgress, type DeliveryRow, type ProgressWrite } from './record-progress.js';
import { threadBundle } from './thread-bundle.js';
import { decodeResults, encodeBatch, type WriterData, type WriterReply, type WriterRequest } from './writer-protocol.js';

/** Where the SQLite store's frequent writes commit: the group commits (one batch at a time), change batches, webhook progress and relay positions. */
export interface ChangeWriter {
  /** Commits a group commit's batch in one transaction; rejects when that transaction failed. */
  apply(changes: readonly QuantityChange[]): Promise<BatchResult[]>;
  /** Applies a ChangeBatch, all or nothing, in a transaction of its own (apply-change-batch.ts); rejects when that transaction failed. */
  applyChangeBatch(batch: ChangeBatch): Promise<ChangeBatchResult>;
  /** Records a webhook endpoint's progress with its attempts, fenced by its lease (record-progress.ts): false when the fence refused it; rejects when the transaction failed. */
  recordProgress(write: ProgressWrite): Promise<boolean>;
  /** Logs delivery attempts that move no endpoint (record-progress.ts); rejects when the transaction failed. */
  recordAttempts(attempts: DeliveryRow[]): Promise<void>;
  /** Moves a relay on, fenced by its lease (record-position.ts): false when the fence refused it; rejects when the write failed. */
  recordPosition(write: PositionWrite): Promise<boolean>;
  /** Reservation writes together in one transaction (reservation-writes.ts), an answer each in order; rejects when that transaction failed. */
  reservationOps(ops: readonly ReservationWrite[]): Promise<ReservationWriteResult[]>;
  /** Marks the reservations past their expiry expired (reservation-writes.ts); rejects when the transaction failed. */
  expireDue(): Promise<Reservation[]>;
  /** The durability settings of the connection that commits. */
  durability(): Promise<Record<string, string>>;
  /** Why the writer can no longer commit (its thread stopped), or undefined while it can. */
  failure(): Error | undefined;
  close(): Promise<void>;
}

/** On the main connection, the commit blocking the event loop: for a private :memory: database, which no other thread can open. */
export function inThreadWriter(db: Database.Database, options: BatchOptions = {}): ChangeWriter {
  return {
    apply: async (changes) => applyBatch(db, changes, options),
    applyChangeBatch: async (batch) => applyChangeBatch(db, batch, options),
    recordProgress: async (write) => recordProgress(db, write),
    recordAttempts: async (attempts) => recordAttempts(db, attempts),
    recordPosition: async (write) => recordPosition(db, write),
    reservationOps: async (ops) => reservationWrites(db).group(ops),
    expireDue: async () => reservationWrites(db).expireDue(),
    durability: async () => durabilityOf(db),
    failure: () => undefined,
    close: async () => {},
  };
}

/**
 * In a worker thread with its own connection (writer-thread.ts), so the fsync no longer stops the
 * event loop. The thread answers requests in the order it gets them. It starts with the first
 * request, so a command that only reads (`keys list`) neither waits for it to start nor to stop.
 */
export function threadWriter(filename: string, options: BatchOptions = {}): ChangeWriter {
  const waiting: { resolve: (reply: WriterReply) => void; reject: (err: unknown) => void }[] = [];
  let stopped: Error | undefined;
  let thread: { worker: Worker; exited: Promise<void> } | undefined;
  const stop = (err: Error) => {
    stopped ??= new StoreUnavailableError('the SQLite writer thread stopped', { cause: err });
    for (const w of waiting.splice(0)) w.reject(stopped);
  };
  const started = () => {
    if (thread) return thread.worker;
    const worker = startThread(new URL(`./writer-thread${extname(fileURLToPath(import.meta.url))}`, import.meta.url), { filename, options } satisfies WriterData);
    // Keeps the process alive only while a request or the close is under way.
    worker.unref();
    thread = { worker, exited: new Promise<void>((resolve) => worker.once('exit', () => resolve())) };
    worker.on('error', stop);
    worker.on('exit', (code) => stop(new Error(`exit code ${code}`)));
    worker.on('message', (reply: WriterReply) => {
      waiting.shift()?.resolve(reply);
      if (waiting.length === 0) worker.unref();
    });
    return worker;
  };
  const ask = (request: WriterRequest): Promise<WriterReply> => {
    if (stopped) return Promise.reject(stopped);
    const worker = started();
    return new Promise((resolve, reject) => {
      waiting.push({ resolve, reject });
      worker.ref();
      worker.postMessage(request);
    });
  };
  return {
    async apply(changes) {
      const reply = await ask({ batch: encodeBatch(changes) });
      if ('failed' in reply) throw errorOf(reply.failed);
      if (!('results' in reply)) throw new Error('the writer thread answered a batch with something else');
      return decodeResults(reply.results, changes);
    },
    async applyChangeBatch(batch) {
      const reply = await ask({ changeBatch: batch });
      if ('failed' in reply) throw errorOf(reply.failed);
      if (!('batchResult' in reply)) throw new Error('the writer thread answered a change batch with something else');
      return reply.batchResult;
    },
    // Straight through the thread's ordered queue, not a serialCommit: its timeout answers a write
    // in flight as failed while it may still commit, and the endpoint worker retries a failed flush,
    // logging its attempts twice; here a flush is answered once the thread has run it (its busy
    // timeout bounds the wait), each worker has one flush in flight at most, and a close is
    // answered after every write asked before it.
    recordProgress: async (write) => recorded(await ask({ progress: write }), 'progress'),
    recordAttempts: async (attempts) => void recorded(await ask({ attempts }), 'attempts'),
    // As progress: straight through the ordered queue, one in flight per relay.
    recordPosition: async (write) => recorded(await ask({ position: write }), 'a position'),
    reservationOps: async (ops) => answered(await ask({ reservationOps: [...ops] }), 'reservationAnswers'),
    expireDue: async () => answered(await ask({ expireDue: true }), 'expired'),
    async durability() {
      const reply = await ask({ durability: true });
      if (!('durability' in reply)) throw new Error('the writer thread answered a durability request with something else');
      return reply.durability;
    },
    failure: () => stopped,
    async close() {
      // Never started: nothing to stop, and every later request is refused as after a close.
      if (!thread) return void stop(new Error('closed before its first request'));
      thread.worker.ref();
      if (!stopped) thread.worker.postMessage({ close: true } satisfies WriterRequest);
      await thread.exited;
    },
  };
}

/**
 * A worker thread running `entry` in the same form of the code as its caller: compiled JavaScript as
 * deployed, or, where the sources run (the tests, the bench), the entry's sources bundled as the
 * build bundles them (thread-bundle.ts).
 */
export function startThread(entry: URL, workerData: unknown): Worker {
  return new Worker(entry.pathname.endsWith('.ts') ? threadBundle(entry) : entry, { workerData });
}

/** The member `key` of a reply, or the failed transaction thrown. */
function answered<K extends 'reservationAnswers' | 'expired'>(reply: WriterReply, key: K): Extract<WriterReply, Record<K, unknown>>[K] {
  if ('failed' in reply) throw errorOf(reply.failed);
  if (!(key in reply)) throw new Error(`the writer thread answered ${key} with something else`);
  return (reply as Extract<WriterReply, Record<K, unknown>>)[key];
}

/** The answer to progress, attempts or a position: whether it was recorded, or the failed transaction thrown. */
function recorded(reply: WriterReply, what: string): boolean {
  if ('failed' in reply) throw errorOf(reply.failed);
  if (!('recorded' in reply)) throw new Error(`the writer thread answered ${what} with something else`);
  return reply.recorded;
}
