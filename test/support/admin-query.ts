import pg from 'pg';

/** The PostgreSQL server tests use; every test works in its own schema, dropped afterwards. */
export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';

const CONNECT_TIMEOUT_MS = 3000;

/** One statement on a short-lived connection of its own (to the tests' server unless told another), outside any store under test. */
export async function adminQuery<R extends pg.QueryResultRow = pg.QueryResultRow>(sql: string, databaseUrl = TEST_DATABASE_URL): Promise<R[]> {
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
  client.on('error', () => {});
  await client.connect();
  try {
    return (await client.query<R>(sql)).rows;
  } finally {
    await client.end();
  }
}
