import { Worker } from 'node:worker_threads';
import type Database from 'better-sqlite3';
import { StoreUnavailableError } from '../errors.js';
import { changeApplier, failure, type BatchResult } from './sqlite-changes.js';
import type { QuantityChange } from './store.js';

/** Where the SQLite store's group commits run. One batch at a time; the next gathers meanwhile. */
export interface ChangeWriter {
  apply(changes: readonly QuantityChange[]): Promise<BatchResult[]>;
  close(): Promise<void>;
}

/** On the main connection, blocking the event loop for the commit: for a private :memory: database, which no other thread can open. */
export function inThreadWriter(db: Database.Database): ChangeWriter {
  const apply = changeApplier(db);
  return {
    apply: async (changes) => apply(changes),
    close: async () => {},
  };
}

/**
 * In a worker thread with its own connection: the commit's fsync no longer stops the event loop.
 * The worker runs TypeScript through tsx, registered in the thread itself.
 */
export function threadWriter(filename: string): ChangeWriter {
  const entry = new URL('./sqlite-writer.ts', import.meta.url).href;
  const tsx = import.meta.resolve('tsx/esm/api');
  const worker = new Worker(`import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(entry)}); })`, {
    eval: true,
    workerData: { filename },
  });
  // Keeps the process alive only while a batch or the close is under way.
  worker.unref();
  let waiting: { resolve: (r: BatchResult[]) => void; reject: (e: unknown) => void } | undefined;
  let stopped: Error | undefined;
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  const stop = (err: Error) => {
    stopped ??= new StoreUnavailableError('the SQLite writer thread stopped', { cause: err });
    waiting?.reject(stopped);
    waiting = undefined;
  };
  worker.on('error', stop);
  worker.on('exit', (code) => stop(new Error(`exit code ${code}`)));
  worker.on('message', ({ results }: { results: BatchResult[] | { error: BatchResult } }) => {
    const w = waiting;
    waiting = undefined;
    worker.unref();
    if (Array.isArray(results)) w?.resolve(results);
    else w?.reject(errorOf(results.error));
  });
  return {
    apply(changes) {
      if (stopped) return Promise.reject(stopped);
      return new Promise((resolve, reject) => {
        waiting = { resolve, reject };
        worker.ref();
        worker.postMessage({ changes });
      });
    },
    async close() {
      worker.ref();
      if (!stopped) worker.postMessage({ close: true });
      await exited;
    },
  };
}

/** A failure that crossed from the writer, as an Error with its SQLite code (for the 503 mapping). */
export function errorOf(result: BatchResult): Error {
  const { message, code } = 'error' in result ? result.error : failure(new Error('not a failure')).error;
  return Object.assign(new Error(message), code === undefined ? {} : { code });
}
