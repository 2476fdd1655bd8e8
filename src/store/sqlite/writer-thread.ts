/**
 * The SQLite writer thread: owns the connection that commits changes, so a group commit's
 * fsync waits here while the main thread keeps serving requests and gathering the next batch.
 * It answers each request, in order: { changes } with { results } or { failed }; { durability }
 * with { durability }; { close } closes the connection and ends the thread.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { QuantityChange } from '../../domain/inventory.js';
import { changeApplier, failure, type BatchResult, type ChangeFailure } from './apply-batch.js';
import { durabilityOf, openSqliteConnection } from './connection.js';

export type WriterRequest = { changes: readonly QuantityChange[] } | { durability: true } | { close: true };
export type WriterReply = { results: BatchResult[] } | { failed: ChangeFailure } | { durability: Record<string, string> };

const port = parentPort!;
const db = openSqliteConnection((workerData as { filename: string }).filename);
const apply = changeApplier(db);

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
  let reply: WriterReply;
  try {
    reply = { results: apply(request.changes) };
  } catch (err) {
    // The whole transaction failed (busy past the timeout, disk error): every change with it.
    reply = { failed: failure(err) };
  }
  port.postMessage(reply);
});
