import type { PoolClient, QueryConfig, QueryResult, QueryResultRow } from 'pg';
import { beginStatement, BULK_STATEMENT_TIMEOUT_MS, onConnection, QUERY_TIMEOUT_GRACE_MS, type StorePool } from './connection.js';

/** The driver gives up on the answer to a bulk statement (a COPY's included) only after this, for when the server stops answering. */
export const BULK_READ_TIMEOUT_MS = BULK_STATEMENT_TIMEOUT_MS + QUERY_TIMEOUT_GRACE_MS;

/** A statement of a bulk transaction, read until BULK_READ_TIMEOUT_MS. */
export type BulkQuery = <R extends QueryResultRow>(text: string, values?: unknown[]) => Promise<QueryResult<R>>;

export interface BulkWork<T> {
  /** The transaction's statements; `client` for what goes past a statement (COPY). */
  run(query: BulkQuery, client: PoolClient): Promise<T>;
  /** Whether to commit what run wrote (default: always); otherwise it is rolled back. */
  keep?(result: T): boolean;
}

/**
 * Work no request waits on, the migrations and an operator's import, in one transaction on a
 * pooled connection: its statements, and its waits between them, run under
 * BULK_STATEMENT_TIMEOUT_MS. The store's own timeout is a request's: under it the server would
 * cancel an index built over a large table, a wait for another instance's migrations, or, on a
 * loaded machine, the migrations of a store opened with a timeout of a few hundred ms.
 */
export function inBulkTransaction<T>(pool: StorePool, work: BulkWork<T>): Promise<T> {
  // The pool's connection handling: a failure rolls back, or drops a connection that cannot.
  return onConnection(pool, undefined, async (client, send) => {
    const query: BulkQuery = <R extends QueryResultRow>(text: string, values: unknown[] = []) =>
      client.query<R>({ text, values, query_timeout: BULK_READ_TIMEOUT_MS } as QueryConfig);
    // Sent as any statement without a deadline, so read within the store's own timeouts: the server answers a BEGIN at
    // once, and one that took the connection and fell silent is found out then, not after a bulk statement's wait.
    await send(beginStatement({ ...pool.settings, statementTimeoutMs: BULK_STATEMENT_TIMEOUT_MS, idleInTransactionTimeoutMs: BULK_STATEMENT_TIMEOUT_MS }), 'BEGIN');
    const result = await work.run(query, client);
    await query((work.keep?.(result) ?? true) ? 'COMMIT' : 'ROLLBACK');
    return result;
  });
}
