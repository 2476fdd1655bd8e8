/**
 * The durable SQLite baseline's writer thread (BARE_COMMIT=thread in bare-durable-sqlite.ts): a
 * connection of its own to the file the main thread made, committing each batch it is posted in
 * one transaction and posting back its results; null closes the connection and ends the thread.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { BareWrites } from './bare-durable.js';
import { bareCommitter, bareConnection, decodeBareBatch, type BareBatchMessage, type BareReply } from './bare-sqlite-writes.js';

const port = parentPort!;
const { filename, writes } = workerData as { filename: string; writes: BareWrites };
const db = bareConnection(filename);
const commit = bareCommitter(db, writes);

port.on('message', (batch: BareBatchMessage | null) => {
  if (batch === null) {
    db.close();
    port.close();
    return;
  }
  let reply: BareReply;
  try {
    reply = { results: commit(decodeBareBatch(batch)) };
  } catch (err) {
    reply = { failed: (err as Error).message };
  }
  port.postMessage(reply);
});
