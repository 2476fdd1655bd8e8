import pg, { Query, type Connection, type QueryResult, type QueryResultRow } from 'pg';

type Value = string | Buffer | null;
/** How pg turns a value into what Bind sends (arrays, dates, bigints...); exported by pg but missing from its types. */
const { prepareValue } = (pg as unknown as { utils: { prepareValue: (value: unknown) => Value } }).utils;

type Callback = (err: Error | undefined, results: unknown) => void;

/**
 * One statement in a transaction of its own, sent in one round trip: BEGIN and the pool's SET
 * LOCALs, the statement with its values, and COMMIT go out as extended-protocol messages in one
 * write, with one Sync after COMMIT. The server runs them in order as one explicit transaction, so
 * everything the three round trips gave holds: the settings are in force before the statement
 * starts (statement_timeout included), the statement is bound, never spliced into the text, and a
 * failure skips the rest up to the Sync, COMMIT included, leaving the transaction aborted for the
 * caller's ROLLBACK. Nothing is named or prepared, as a transaction-mode pooler requires.
 *
 * pg's Query sends Parse, Bind, Describe, Execute and Sync from prepare(); this sends the same
 * messages for the statement, between its own, and keeps pg's handling of every answer.
 */
export class TransactionQuery extends Query {
  readonly #preamble: readonly string[];
  readonly #text: string;
  readonly #values: Value[];

  /** `preamble`: one statement each (BEGIN, SET LOCAL ...). The values are mapped here, so a value pg cannot send throws before anything is written. */
  constructor(preamble: readonly string[], text: string, values: readonly unknown[], callback: Callback) {
    super({ text, values: [...values] }, callback);
    this.#preamble = preamble;
    this.#text = text;
    this.#values = values.map((value) => prepareValue(value));
  }

  /** Always the extended protocol, whether or not the statement has values. */
  requiresPreparation(): boolean {
    return true;
  }

  prepare(connection: Connection): void {
    for (const text of this.#preamble) unnamed(connection, text);
    connection.parse({ text: this.#text, name: '', types: [] }, true);
    connection.bind({ values: this.#values }, true);
    connection.describe({ type: 'P', name: '' }, true);
    connection.execute({}, true);
    unnamed(connection, 'COMMIT');
    connection.sync();
  }
}

/** A statement without values or rows to describe: only its CommandComplete comes back. */
function unnamed(connection: Connection, text: string): void {
  connection.parse({ text, name: '', types: [] }, true);
  connection.bind({}, true);
  connection.execute({}, true);
}

/** The statement's result among the transaction's (either protocol: BEGIN and its settings, the statement, COMMIT): the one before COMMIT's. */
export function statementResult<R extends QueryResultRow>(results: unknown): QueryResult<R> {
  return (results as QueryResult<R>[]).at(-2)!;
}
