import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type Database from 'better-sqlite3';
import { StoreUnavailableError } from '../errors.js';
import { changeApplier, errorOf, type BatchResult, type ChangeFailure } from './sqlite-changes.js';
import type { QuantityChange } from './store.js';

/** Where the SQLite store's group commits run: one batch at a time. */
export interface ChangeWriter {
  apply(changes: readonly QuantityChange[]): Promise<BatchResult[]>;
  /** Why the writer can no longer commit (its thread stopped), or undefined while it can. */
  failure(): Error | undefined;
  close(): Promise<void>;
}

/** On the main connection, the commit blocking the event loop: for a private :memory: database, which no other thread can open. */
export function inThreadWriter(db: Database.Database): ChangeWriter {
  const apply = changeApplier(db);
  return {
    apply: async (changes) => apply(changes),
    failure: () => undefined,
    close: async () => {},
  };
}

/**
 * In a worker thread with its own connection (src/store/sqlite-writer-thread.ts), so the fsync no
 * longer stops the event loop.
 */
export function threadWriter(filename: string): ChangeWriter {
  const worker = startThread(new URL(`./sqlite-writer-thread${extname(fileURLToPath(import.meta.url))}`, import.meta.url), { filename });
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
  worker.on('message', (reply: { results: BatchResult[] } | { failed: ChangeFailure }) => {
    const w = waiting;
    waiting = undefined;
    worker.unref();
    if ('results' in reply) w?.resolve(reply.results);
    else w?.reject(errorOf(reply.failed));
  });
  return {
    apply(changes) {
      if (stopped) return Promise.reject(stopped);
      // The store sends one batch at a time; a second would take the first one's answer.
      if (waiting) return Promise.reject(new Error('a batch is already being written'));
      return new Promise((resolve, reject) => {
        waiting = { resolve, reject };
        worker.ref();
        worker.postMessage({ changes });
      });
    },
    failure: () => stopped,
    async close() {
      worker.ref();
      if (!stopped) worker.postMessage({ close: true });
      await exited;
    },
  };
}

/**
 * The thread runs the same form of the code as this module: compiled JavaScript as deployed, or the
 * TypeScript sources under the tests' loader, which Node 20 does not pass on to a worker by itself.
 */
function startThread(entry: URL, workerData: unknown): Worker {
  if (!entry.pathname.endsWith('.ts')) return new Worker(entry, { workerData });
  const loader = import.meta.resolve('tsx/esm/api');
  const code = `import(${JSON.stringify(loader)}).then((m) => { m.register(); return import(${JSON.stringify(entry.href)}); })`;
  return new Worker(code, { eval: true, workerData });
}
