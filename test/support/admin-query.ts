import pg from 'pg';

/** The PostgreSQL server tests use; every test works in its own schema, dropped afterwards. */
export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';

/**
 * PostgreSQL itself, for the tests' own sessions (admin statements, connections that hold a lock or
 * a SET): TEST_DATABASE_URL may go through a transaction-mode pooler, which keeps no session.
 */
export const TEST_DATABASE_DIRECT_URL = process.env.TEST_DATABASE_DIRECT_URL || TEST_DATABASE_URL;

/** DATABASE_DIRECT_URL for the stores and servers under test (TEST_STORE_DIRECT_URL); unset, none, as a deployment without it. */
export const TEST_STORE_DIRECT_URL = process.env.TEST_STORE_DIRECT_URL || undefined;

const CONNECT_TIMEOUT_MS = 3000;

/** One statement on a short-lived connection of its own (to the tests' server unless told another), outside any store under test. */
export async function adminQuery<R extends pg.QueryResultRow = pg.QueryResultRow>(sql: string, databaseUrl = TEST_DATABASE_DIRECT_URL): Promise<R[]> {
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
  client.on('error', () => {});
  await client.connect();
  try {
    return (await client.query<R>(sql)).rows;
  } finally {
    await client.end();
  }
}
