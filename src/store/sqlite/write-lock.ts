import { performance } from 'node:perf_hooks';
import type Database from 'better-sqlite3';
import { BUSY_TIMEOUT_MS } from './connection.js';

/** How long a writer that finds the write lock taken sleeps before it tries again. */
export const LOCK_RETRY_MS = 1;

/**
 * Runs `body` in one IMMEDIATE transaction on `db` (the transactions it runs nest in it as
 * savepoints), and commits it; rolls it back if `body` or the commit throws. The write lock is
 * taken by trying again every LOCK_RETRY_MS, for up to BUSY_TIMEOUT_MS, not by SQLite's busy
 * handler: that handler sleeps longer and longer between tries (100 ms each after the first
 * quarter second), so a writer waiting on a store that another process writes back to back (an
 * import's chunks) finds the lock free only by chance, and a PATCH could wait seconds. Trying every
 * millisecond, it takes the lock in the first gap: the import leaves one after each chunk.
 */
export function inWriteLock<T>(db: Database.Database, body: () => T): T {
  const lock = locks.get(db) ?? lockOn(db);
  lock.take();
  try {
    const result = body();
    lock.commit.run();
    return result;
  } catch (err) {
    if (db.inTransaction) lock.rollback.run();
    throw err;
  }
}

interface Lock {
  take(): void;
  commit: Database.Statement;
  rollback: Database.Statement;
}

/** Made at a connection's first locked write, then reused. */
const locks = new WeakMap<Database.Database, Lock>();

/** What the thread sleeps on between tries: Atomics.wait on a value nobody changes is a sleep that blocks only this thread. */
const nap = new Int32Array(new SharedArrayBuffer(4));

function lockOn(db: Database.Database): Lock {
  const noWait = db.prepare('PRAGMA busy_timeout = 0');
  const wait = db.prepare(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
  const begin = db.prepare('BEGIN IMMEDIATE');
  const lock: Lock = {
    take() {
      const deadline = performance.now() + BUSY_TIMEOUT_MS;
      noWait.get();
      try {
        for (;;) {
          try {
            begin.run();
            return;
          } catch (err) {
            if (!isBusy(err) || performance.now() >= deadline) throw err;
            Atomics.wait(nap, 0, 0, LOCK_RETRY_MS);
          }
        }
      } finally {
        // Inside the transaction, any other wait (rare in WAL mode) is SQLite's busy handler's again.
        wait.get();
      }
    },
    commit: db.prepare('COMMIT'),
    rollback: db.prepare('ROLLBACK'),
  };
  locks.set(db, lock);
  return lock;
}

function isBusy(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY');
}
