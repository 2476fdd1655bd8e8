import { Client, escapeIdentifier, Pool, types, type CustomTypesConfig, type PoolClient, type PoolConfig, type QueryResult, type QueryResultRow } from 'pg';
import { StoreUnavailableError } from '../../errors.js';
import { clock, DEFAULT_STORE_TIMEOUT_MS, StoreTimeoutError, within } from '../deadline.js';
import { statementResult, TransactionQuery } from './transaction-query.js';
import { causeOf, PostgresUnavailableError, storeAddress } from './unreachable.js';
import { postgresUrlProblem } from './url.js';

/** Connections per instance: several instances share the server's max_connections (100 by default). */
export const POOL_MAX = 10;
/** Opening a connection, or waiting for a free one, longer than this answers 503 instead of queueing on. */
export const CONNECTION_TIMEOUT_MS = 3000;
/** Idle connections close after this, so a quiet instance holds few server slots. */
export const IDLE_TIMEOUT_MS = 30_000;
/** The server cancels any statement running longer (ours take milliseconds): no request hangs on a lock. Follows STORE_TIMEOUT_MS unless overridden. */
export const STATEMENT_TIMEOUT_MS = DEFAULT_STORE_TIMEOUT_MS;
/** A call without a deadline of its own (migrations, the CLI's imports) gives up this long after statement_timeout, for when the server itself stops answering. */
export const QUERY_TIMEOUT_GRACE_MS = 1000;
/** An operator's bulk work (pets import), which no request waits on and where a million rows take seconds: the server cancels a statement of it only after this. */
export const BULK_STATEMENT_TIMEOUT_MS = 30 * 60_000;
/** The server ends a transaction left idle this long (a frozen instance), releasing its row locks; twice the default store timeout, after which our side has long given the transaction up. */
export const IDLE_IN_TRANSACTION_TIMEOUT_MS = 2 * DEFAULT_STORE_TIMEOUT_MS;
/** TCP keepalive starts probing after this much silence, so a peer that vanished without a FIN is noticed. */
export const KEEPALIVE_INITIAL_DELAY_MS = 10_000;
/** Shown in pg_stat_activity, so an operator can tell this service's connections apart. */
export const APPLICATION_NAME = 'petstore-inventory';
/** First half of the migration advisory lock ("pets" in ASCII); the second half is the schema's hash. */
export const MIGRATION_LOCK_KEY = 0x70657473;

/** Strict on purpose: the name goes into every transaction's SET LOCAL and into DDL. */
const SCHEMA_NAME = /^[a-z_][a-z0-9_]*$/;

export interface PostgresStoreOptions {
  /** Schema to create if missing and put on every connection's search_path (test isolation); default: the server's. */
  schema?: string;
  /** Overrides CONNECTION_TIMEOUT_MS. */
  connectionTimeoutMs?: number;
  /** Overrides statement_timeout (default: timeoutMs); the client-side read timeout of calls without a deadline follows it. */
  statementTimeoutMs?: number;
  /** STORE_TIMEOUT_MS: the longest a request waits on the store, connection and statements included (default DEFAULT_STORE_TIMEOUT_MS). */
  timeoutMs?: number;
  /** A change of quantity appends no event: see StoreOpenOptions (the bench's alone). */
  omitChangeEvents?: boolean;
  /** DATABASE_DIRECT_URL: the same database, not through a pooler, for what needs a session (LISTEN, migrations); default: the store's URL. */
  directUrl?: string;
}

/** What every transaction of a pool sets for itself first: a transaction-mode pooler keeps no session state between transactions. */
export interface TransactionSettings {
  statementTimeoutMs: number;
  idleInTransactionTimeoutMs: number;
  schema?: string;
}

/**
 * The first statement of every transaction, one simple-protocol string, so a single round trip:
 * BEGIN, then the settings as SET LOCAL, which end with the transaction. Startup options and
 * session SETs would not do behind a transaction-mode pooler: it refuses the former and hands
 * the latter to whichever client gets that server connection next.
 */
export function beginStatement(settings: TransactionSettings): string {
  return beginStatements(settings).join('; ');
}

/** beginStatement's statements one by one, for the extended protocol (one statement per message; see TransactionQuery). */
export function beginStatements(settings: TransactionSettings): string[] {
  const local = [
    `statement_timeout = ${milliseconds(settings.statementTimeoutMs)}`,
    `idle_in_transaction_session_timeout = ${milliseconds(settings.idleInTransactionTimeoutMs)}`,
    // on: a COMMIT returns only once the WAL is flushed, so an acknowledged change survives a crash or power loss.
    'synchronous_commit = on',
  ];
  if (settings.schema !== undefined) local.push(`search_path = ${escapeIdentifier(validSchema(settings.schema))}`);
  return ['BEGIN', ...local.map((setting) => `SET LOCAL ${setting}`)];
}

/** A pool whose transactions all begin with `begin` (see beginStatement). */
export class StorePool extends Pool {
  readonly settings: TransactionSettings;
  /** Where it connects, as failures name it (storeAddress): never the URL's credentials. */
  readonly address: string;
  readonly begin: string;
  /** `begin` one statement each. */
  readonly beginEach: readonly string[];
  constructor(config: PoolConfig, settings: TransactionSettings) {
    super(config);
    this.settings = settings;
    this.address = storeAddress(config.connectionString ?? '');
    this.beginEach = beginStatements(settings);
    this.begin = this.beginEach.join('; ');
  }
}

function validSchema(schema: string): string {
  if (!SCHEMA_NAME.test(schema)) throw new Error(`schema must match ${SCHEMA_NAME.source}, got "${schema}"`);
  return schema;
}

function milliseconds(ms: number): number {
  if (!Number.isSafeInteger(ms) || ms < 0) throw new Error(`a timeout must be a whole number of ms, got ${ms}`);
  return ms;
}

/** int8 as bigint, so ids above 2^53 keep every digit; for this pool only, since a global parser would change every other pg user in the process. */
const INT8_AS_BIGINT: CustomTypesConfig = {
  getTypeParser: (...[oid, format]: Parameters<typeof types.getTypeParser>): unknown =>
    oid === types.builtins.INT8 ? (text: string) => BigInt(text) : types.getTypeParser(oid, format),
};

/** A pool on the database at `url`, its transactions beginning with the store's settings; connections open as they are needed. */
export function openPool(url: string, options: PostgresStoreOptions): StorePool {
  const pool = new StorePool(poolConfig(url, options), transactionSettings(options));
  // An idle connection that drops is already out of the pool and the next query reconnects; unhandled, this event would kill the process.
  pool.on('error', ignore);
  return pool;
}

/**
 * One connection outside the pool for the event log's LISTEN (a pooled connection goes back to the
 * pool). It asks for statement_timeout at startup, which a transaction-mode pooler refuses
 * (POOLER_REFUSAL): a LISTEN through one would never hear a notification, and would stay on
 * whichever server connection ran it, each NOTIFY then a warning in the pooler's log.
 */
export function openListenClient(url: string, options: PostgresStoreOptions): Client {
  return new Client({ ...poolConfig(url, options), statement_timeout: statementTimeoutOf(options) });
}

/** What PgBouncer answers a startup parameter it does not pass on with: the URL goes through a transaction-mode pooler. */
export const POOLER_REFUSAL = /unsupported startup parameter/i;

function transactionSettings(options: PostgresStoreOptions): TransactionSettings {
  const settings: TransactionSettings = {
    statementTimeoutMs: statementTimeoutOf(options),
    idleInTransactionTimeoutMs: options.timeoutMs === undefined ? IDLE_IN_TRANSACTION_TIMEOUT_MS : 2 * options.timeoutMs,
  };
  return options.schema === undefined ? settings : { ...settings, schema: validSchema(options.schema) };
}

function statementTimeoutOf(options: PostgresStoreOptions): number {
  return options.statementTimeoutMs ?? options.timeoutMs ?? STATEMENT_TIMEOUT_MS;
}

/** Startup parameters a transaction-mode pooler accepts only (application_name): every other setting is per transaction, see beginStatement. */
export function poolConfig(url: string, options: PostgresStoreOptions): PoolConfig {
  const problem = postgresUrlProblem(url);
  if (problem !== undefined) throw new Error(`DATABASE_URL ${problem}`);
  return {
    connectionString: url,
    max: POOL_MAX,
    connectionTimeoutMillis: options.connectionTimeoutMs ?? CONNECTION_TIMEOUT_MS,
    idleTimeoutMillis: IDLE_TIMEOUT_MS,
    query_timeout: statementTimeoutOf(options) + QUERY_TIMEOUT_GRACE_MS,
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_INITIAL_DELAY_MS,
    application_name: APPLICATION_NAME,
    types: INT8_AS_BIGINT,
  };
}

/**
 * Runs fn between the pool's BEGIN (with its settings) and COMMIT on one pooled connection; on failure rolls back, or drops a connection that cannot.
 * With a deadline (a `clock()` time), waiting for the connection and every statement end by it.
 */
export function inTransaction<T>(pool: StorePool, fn: (client: PoolClient) => Promise<T>, deadline?: number): Promise<T> {
  return onConnection(pool, deadline, async (client, statement) => {
    await statement(pool.begin, 'BEGIN');
    const result = await fn(client);
    await statement('COMMIT');
    return result;
  });
}

/**
 * One statement in a transaction of its own on a pooled connection (behind a pooler the settings
 * hold only within a transaction), waiting for the connection and the answers only until
 * `deadline` (a `clock()` time). A connection whose statement timed out is dropped, never reused:
 * its answer may still be on the way.
 */
export function queryOnPool<R extends QueryResultRow>(pool: StorePool, statement: QueryStatement, deadline: number): Promise<QueryResult<R>> {
  if (statement.values !== undefined && statement.values.length > 0) {
    // Bound values need the extended protocol: BEGIN, the statement and COMMIT still go in one round trip (TransactionQuery).
    return onConnection(pool, deadline, (client) => queryInTransaction<R>(client, pool.beginEach, statement, deadline));
  }
  // Without values the driver uses the simple protocol, which carries several statements in one
  // message: BEGIN with its settings, the statement and COMMIT then cost one round trip, not three.
  // The server still runs them one by one (statement_timeout applies to each), a failure skipping the rest.
  return onConnection(pool, deadline, async (_client, send) =>
    statementResult<R>(await send(`${pool.begin};\n${statement.text};\nCOMMIT`, statement.name ?? statement.text)),
  );
}

type Send = (text: string, name?: string) => Promise<QueryResult>;

/** Runs fn on one pooled connection (by `deadline` when given), rolling back after a failure, or dropping a connection that cannot. */
export async function onConnection<T>(pool: StorePool, deadline: number | undefined, fn: (client: PoolClient, send: Send) => Promise<T>): Promise<T> {
  const client = deadline === undefined ? await pool.connect() : await connectBy(pool, deadline);
  // A connection dropping between our statements fails the next one; unhandled, the event would kill the process.
  client.on('error', ignore);
  const send: Send = (text, name = text) => (deadline === undefined ? client.query(text) : queryBy(client, { name, text }, deadline));
  let reusable = true;
  try {
    return await fn(client, send);
  } catch (err) {
    // After a lost or silent connection a ROLLBACK would only wait out another timeout; dropping the connection rolls back too.
    reusable = !isTransient(err) && (await send('ROLLBACK').then(() => true, () => false));
    throw err;
  } finally {
    client.off('error', ignore);
    client.release(!reusable);
  }
}

/** A statement and its name, which only labels it (in errors): nothing is prepared by name, as a pooler may hand each transaction another server connection. */
export interface Statement {
  name: string;
  text: string;
}

/** The store's pool as its ports use it, every call refused once the store is closed. */
export interface Pooled {
  readonly pool: StorePool;
  /** One statement, answered (or given up) within the store timeout of this call, waiting for a connection included. */
  readonly query: <R extends QueryResultRow>(statement: Statement, values?: unknown[]) => Promise<QueryResult<R>>;
  /** Runs one driver call (a transaction, say), turning "cannot reach the store now" into StoreUnavailableError. */
  readonly run: <T>(fn: () => Promise<T>) => Promise<T>;
}

/** The pool's calls, with the store timeout `timeoutMs` (STORE_TIMEOUT_MS); end() closes the pool and refuses every call after. */
export function pooled(pool: StorePool, timeoutMs: number): Pooled & { end(): Promise<void> } {
  let ended = false;
  const run = async <T>(fn: () => Promise<T>): Promise<T> => {
    if (ended) throw new StoreUnavailableError('the PostgreSQL store is closed');
    try {
      return await fn();
    } catch (err) {
      throw asUnavailable(err, pool.address);
    }
  };
  return {
    pool,
    run,
    query: (statement, values = []) => run(() => queryOnPool(pool, { ...statement, values }, clock() + timeoutMs)),
    end() {
      ended = true;
      return pool.end();
    },
  };
}

/** A statement, its values, and a name that labels it in errors (never sent: see Statement). */
export interface QueryStatement {
  name?: string;
  text: string;
  values?: unknown[];
}

/**
 * One statement on a connection we hold, answered by `deadline` or failed with the driver's read
 * timeout (which leaves the connection unusable: the caller drops it). Nothing is sent once the
 * deadline has passed.
 */
export function queryBy<R extends QueryResultRow>(client: PoolClient, statement: QueryStatement, deadline: number): Promise<QueryResult<R>> {
  const waitMs = Math.ceil(deadline - clock());
  // The request's time ran out between two statements of a transaction.
  if (waitMs <= 0) return Promise.reject(new StoreTimeoutError(`the PostgreSQL transaction (at ${statement.name ?? statement.text})`, 0));
  return client.query<R>({ text: statement.text, values: statement.values, query_timeout: waitMs } as QueryStatement);
}

/** queryBy in a transaction of its own, begun with `beginEach` and committed, in one round trip (TransactionQuery). */
function queryInTransaction<R extends QueryResultRow>(
  client: PoolClient,
  beginEach: readonly string[],
  statement: QueryStatement,
  deadline: number,
): Promise<QueryResult<R>> {
  const waitMs = Math.ceil(deadline - clock());
  if (waitMs <= 0) return Promise.reject(new StoreTimeoutError(`the PostgreSQL transaction (at ${statement.name ?? statement.text})`, 0));
  return new Promise((resolve, reject) => {
    const query = new TransactionQuery(beginEach, statement.text, statement.values ?? [], (err, results) =>
      err ? reject(err) : resolve(statementResult<R>(results)),
    );
    // pg reads the driver's read timeout from the query it is handed, as from a config.
    client.query(Object.assign(query, { query_timeout: waitMs }));
  });
}

/**
 * A pooled connection by `deadline`: the pool's own connection timeout is fixed, and a request that
 * already waited (behind a batch, say) has less left. A connection the pool hands over after the
 * deadline goes straight back.
 */
export function connectBy(pool: StorePool, deadline: number): Promise<PoolClient> {
  const waitMs = deadline - clock();
  const connecting = pool.connect();
  return within(
    connecting,
    waitMs,
    () => new StoreTimeoutError('waiting for a PostgreSQL connection', waitMs),
    () => void connecting.then((client) => client.release(), ignore),
  );
}

/**
 * SQLSTATEs that mean "not now" rather than "never": connection exceptions (08), insufficient
 * resources (53), shutdown and session kills (57P0x), statement timeout or cancel (57014),
 * lock timeout (55P03), idle-in-transaction timeout (25P03), I/O error (58030), and conflicts a
 * retry resolves (40001 serialization, 40P01 deadlock).
 */
const TRANSIENT_SQLSTATE = /^(08...|53...|57P0.|57014|55P03|25P03|58030|40001|40P01)$/;
/** Socket and DNS failures: the server cannot be reached from here right now. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'EAI_AGAIN',
  'ENOTFOUND',
]);
/** The driver's own connection failures carry no code, only these messages (pg 8, pg-pool 3). */
const DRIVER_CONNECTION_MESSAGE =
  /^(Connection terminated|timeout exceeded when trying to connect|Query read timeout|Client (has encountered a connection error|was closed) and is not queryable|Cannot use a pool after calling end)/;

/** Lost connection, timeout, shutdown, exhaustion or a retryable conflict: worth a retry, not a 500. */
function isTransient(err: unknown): boolean {
  if (err instanceof StoreUnavailableError) return true;
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') return TRANSIENT_SQLSTATE.test(code) || NETWORK_CODES.has(code);
  // Node reports a refused connection to every address of a host (localhost: ::1 and 127.0.0.1) as one AggregateError.
  if (err instanceof AggregateError) return err.errors.some(isTransient);
  return DRIVER_CONNECTION_MESSAGE.test(err.message);
}

/** A transient failure of the store at `address` as StoreUnavailableError (503), saying where and why; anything else as it is. */
export function asUnavailable(err: unknown, address: string): unknown {
  if (err instanceof PostgresUnavailableError) return err;
  return isTransient(err) ? new PostgresUnavailableError(err, address) : err;
}

/**
 * A failure to open the store at `address`: transient, or one no retry mends that is still about
 * reaching it (a login refused, no such database, TLS), as StoreUnavailableError saying where and
 * why; anything else (a migration's own error) as it is.
 */
export function asUnopenable(err: unknown, address: string): unknown {
  if (err instanceof PostgresUnavailableError) return err;
  return isTransient(err) || causeOf(err).connecting ? new PostgresUnavailableError(err, address) : err;
}

function ignore(): void {}
