/**
 * The SQLite writer thread: owns the connection that commits changes, so the fsync of a
 * group commit happens off the event loop while the main thread keeps parsing requests (and
 * gathering the next batch). Messages: { changes } -> { results }; { close } -> exits.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { failure, type BatchResult } from './sqlite-changes.js';
import { openSqliteConnection } from './sqlite-connection.js';
import { changeApplier } from './sqlite-changes.js';
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
  let results: BatchResult[] | { error: BatchResult };
  try {
    results = apply(message.changes);
  } catch (err) {
    // The whole transaction failed (busy past the timeout, disk error): every change with it.
    results = { error: failure(err) };
  }
  port.postMessage({ results });
});
