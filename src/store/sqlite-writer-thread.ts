/**
 * The SQLite writer thread: owns the connection that commits changes, so a group commit's
 * fsync waits here while the main thread keeps serving requests and gathering the next batch.
 * Messages: { changes } -> { results } | { failed }; { close } -> closes and exits.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { changeApplier, failure, type BatchResult, type ChangeFailure } from './sqlite-changes.js';
import { openSqliteConnection } from './sqlite-connection.js';
import type { QuantityChange } from './store.js';

const port = parentPort!;
const db = openSqliteConnection((workerData as { filename: string }).filename);
const apply = changeApplier(db);

port.on('message', (message: { changes: QuantityChange[] } | { close: true }) => {
  if ('close' in message) {
    db.close();
    port.close();
    return;
  }
  let reply: { results: BatchResult[] } | { failed: ChangeFailure };
  try {
    reply = { results: apply(message.changes) };
  } catch (err) {
    // The whole transaction failed (busy past the timeout, disk error): every change with it.
    reply = { failed: failure(err) };
  }
  port.postMessage(reply);
});
