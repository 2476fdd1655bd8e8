/**
 * The SQLite writer thread: owns the connection that commits changes, webhook progress and relay positions, so
 * their fsync waits here while the main thread keeps serving requests and gathering the next batch.
 * It answers each request in order (writer-protocol.ts); { close } closes the connection and ends
 * the thread.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { applyBatch, failure, type BatchResult } from './apply-batch.js';
import { applyChangeBatch } from './apply-change-batch.js';
import { durabilityOf, openSqliteConnection } from './connection.js';
import { recordPosition } from './record-position.js';
import { reservationWrites } from './reservation-writes.js';
import { recordAttempts, recordProgress } from './record-progress.js';
import { inWriteLock } from './write-lock.js';
import { decodeBatch, encodeResults, type WriterData, type WriterReply, type WriterRequest } from './writer-protocol.js';

const port = parentPort!;
const { filename, options } = workerData as WriterData;
const db = openSqliteConnection(filename);

port.on('message', (request: WriterRequest) => {
  if ('close' in request) {
    db.close();
    port.close();
    return;
  }
  if ('durability' in request) {
    port.postMessage({ durability: durabilityOf(db) } satisfies WriterReply);
    return;
  }
  let done: Exclude<WriterReply, { results: unknown } | { failed: unknown } | { durability: unknown }> | { results: BatchResult[] };
  try {
    // Every request writes: the lock is taken here, once, and each request's own transaction nests in it.
    done = inWriteLock(db, () => write(request));
  } catch (err) {
    // The whole transaction failed (busy past the timeout, disk error): every change with it.
    port.postMessage({ failed: failure(err) } satisfies WriterReply);
    return;
  }
  // Outside the try: a batch that committed is never reported as failed (it would be applied again).
  port.postMessage(('results' in done ? { results: encodeResults(done.results) } : done) satisfies WriterReply);
});

/** Runs a request's transaction, its answer not yet encoded. */
function write(request: Exclude<WriterRequest, { close: true } | { durability: true }>) {
  if ('changeBatch' in request) return { batchResult: applyChangeBatch(db, request.changeBatch, options) };
  if ('progress' in request) return { recorded: recordProgress(db, request.progress) };
  if ('position' in request) return { recorded: recordPosition(db, request.position) };
  if ('reservationOps' in request) return { reservationAnswers: reservationWrites(db).group(request.reservationOps) };
  if ('expireDue' in request) return { expired: reservationWrites(db).expireDue() };
  if ('attempts' in request) {
    recordAttempts(db, request.attempts);
    return { recorded: true };
  }
  return { results: applyBatch(db, decodeBatch(request.batch), options) };
}
