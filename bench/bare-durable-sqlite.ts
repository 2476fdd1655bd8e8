/**
 * The durable baseline on SQLite: a bare node:http server whose PATCHes are as durable as the
 * service's and nothing else. better-sqlite3 in WAL mode with synchronous=FULL; the PATCHes (and
 * adjustments, and creations of reservations) parsed in one turn of the event loop commit in one
 * transaction, so one fsync, and each is answered after that commit. Each change of a count bumps
 * and stores its entry's version, as the service's does (its ETag); a reservation writes the rows a
 * creation writes in the service's store (bare-sqlite-writes.ts). No keys table, no idempotency, no
 * change log: the fair ceiling for a durable write on this machine, as the service's figures are
 * compared to it.
 *
 * BARE_COMMIT says where a batch commits. `loop` (the default): on the event loop, which waits for
 * the fsync, and the requests that arrive meanwhile form the next batch; nothing else is answered
 * while it waits. `thread`: in a writer thread with its own connection (bare-sqlite-thread.ts), the
 * batch posted to it as columns and its results posted back, so the event loop goes on answering
 * during the fsync, as the service's does; the changes that arrive meanwhile form the next batch.
 * The two tell what keeping the fsync off the event loop costs a server that does nothing else.
 *
 * Env: DATABASE_URL (the service's seeded database, read once for the pets), PORT, BENCH_KEY (the
 * one key it accepts), BARE_WRITES: what each change writes besides the entry (bare-durable.ts),
 * BARE_COMMIT. Its own tables live in a database file of their own beside DATABASE_URL's.
 */
import { once } from 'node:events';
import { startThread } from '../src/store/sqlite/writer.js';
import { bareCommit, bareWrites, loadItems, serveBare, type BareResult } from './bare-durable.js';
import { bareCommitter, createBareDatabase, encodeBareBatch, type BareReply } from './bare-sqlite-writes.js';
import { requiredEnv } from './env.js';

const databaseUrl = requiredEnv('DATABASE_URL');
const writes = bareWrites();
const commitOn = bareCommit();
const items = await loadItems(databaseUrl);

const filename = `${databaseUrl.replace(/^sqlite:/, '')}.bare`;
const db = createBareDatabase(filename, items);

if (commitOn === 'loop') {
  const commit = bareCommitter(db, writes);
  serveBare({
    items,
    // Synchronous: the event loop waits for the fsync, and the requests that arrive meanwhile form the next batch.
    commit: async (changes) => commit(changes),
    close: () => void db.close(),
  });
} else {
  db.close();
  const worker = startThread(new URL('./bare-sqlite-thread.ts', import.meta.url), { filename, writes });
  const exited = once(worker, 'exit');
  // serveBare has one batch in flight at a time: its answer is the next message.
  let waiting: { resolve: (results: BareResult[]) => void; reject: (err: Error) => void } | undefined;
  // Once the thread is gone, every batch is refused at once (503), not posted to nobody.
  let gone: Error | undefined;
  const fail = (err: Error) => {
    gone ??= err;
    waiting?.reject(err);
    waiting = undefined;
  };
  worker.on('message', (reply: BareReply) => {
    const w = waiting;
    waiting = undefined;
    if ('failed' in reply) w?.reject(new Error(reply.failed));
    else w?.resolve(reply.results);
  });
  worker.on('error', fail);
  worker.on('exit', (code) => fail(new Error(`the writer thread exited with code ${code}`)));
  serveBare({
    items,
    commit: (changes) =>
      new Promise<BareResult[]>((resolve, reject) => {
        if (gone) return reject(gone);
        waiting = { resolve, reject };
        worker.postMessage(encodeBareBatch(changes));
      }),
    close: async () => {
      worker.postMessage(null);
      await exited;
    },
  });
}
