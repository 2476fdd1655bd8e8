import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type AddressInfo } from 'node:net';
import { test, type TestContext } from 'node:test';
import pg from 'pg';
import { StoreUnavailableError } from '../../../src/errors.js';
import { openStore } from '../../../src/store/postgres/open.js';
import { causeOf, storeAddress, unavailableMessage } from '../../../src/store/postgres/unreachable.js';
import { backendSkip, TEST_DATABASE_DIRECT_URL, TEST_DATABASE_URL } from '../../support/backends.js';
import { BIN, spawnServer } from '../../support/process.js';

/** An error as Node or the driver makes it: a message and, when given, a code. */
function failure(message: string, code?: string): Error {
  return Object.assign(new Error(message), code === undefined ? {} : { code });
}

/** A loopback port nothing listens on: taken from the system, then let go. */
async function closedPort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  server.close();
  await once(server, 'close');
  return port;
}

/** What connecting to `url` with the driver fails with. */
async function driverError(url: string): Promise<unknown> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  try {
    await client.connect();
  } catch (err) {
    return err;
  } finally {
    await client.end().catch(() => undefined);
  }
  assert.fail(`connecting to ${url} succeeded`);
}

/** TEST_DATABASE_URL with another user or database. */
function testUrlWith(change: (url: URL) => void): string {
  const url = new URL(TEST_DATABASE_URL);
  change(url);
  return url.href;
}

test('storeAddress: host and port, never the user, the password, the database or the parameters', () => {
  assert.equal(storeAddress('postgres://u:secret@127.0.0.1:18999/x?sslmode=disable'), '127.0.0.1:18999');
  assert.equal(storeAddress('postgres://u:secret@db.internal/x'), 'db.internal:5432');
  assert.equal(storeAddress('postgresql://[::1]:6432/x'), '[::1]:6432');
  assert.equal(storeAddress('postgres:///x?host=/var/run/postgresql'), '/var/run/postgresql (socket, port 5432)');
  assert.equal(storeAddress('not a url with secret'), 'the address in DATABASE_URL');
});

test('each cause in one sentence, with where: refused, authentication, DNS, timeout, no such database, TLS, the driver otherwise', () => {
  const at = '127.0.0.1:18999';
  const cases: [unknown, string][] = [
    [failure('connect ECONNREFUSED 127.0.0.1:18999', 'ECONNREFUSED'), 'cannot be reached: connection refused (is PostgreSQL running and listening there?)'],
    // localhost: a refusal on each of ::1 and 127.0.0.1, reported as one AggregateError with an empty message.
    [Object.assign(new AggregateError([failure('connect ECONNREFUSED ::1:5432', 'ECONNREFUSED'), failure('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED')], ''), { code: 'ECONNREFUSED' }), 'cannot be reached: connection refused (is PostgreSQL running and listening there?)'],
    [failure('password authentication failed for user "u"', '28P01'), 'cannot be reached: password authentication failed for user "u"'],
    [failure('role "u" does not exist', '28000'), 'cannot be reached: authentication failed: role "u" does not exist'],
    [failure('getaddrinfo ENOTFOUND db.invalid', 'ENOTFOUND'), 'cannot be reached: host not found (DNS: ENOTFOUND)'],
    [failure('getaddrinfo EAI_AGAIN db.example', 'EAI_AGAIN'), 'cannot be reached: host not found (DNS: EAI_AGAIN)'],
    [failure('connect ETIMEDOUT 10.0.0.9:5432', 'ETIMEDOUT'), 'cannot be reached: timed out: no answer from the server'],
    [failure('timeout exceeded when trying to connect'), 'cannot be reached: timed out: the connection did not open in time'],
    [failure('Connection terminated due to connection timeout'), 'cannot be reached: timed out: the connection did not open in time'],
    [failure('database "x" does not exist', '3D000'), 'cannot be reached: database "x" does not exist'],
    [failure('The server does not support SSL connections'), 'cannot be reached: TLS: The server does not support SSL connections'],
    [failure('self-signed certificate', 'DEPTH_ZERO_SELF_SIGNED_CERT'), 'cannot be reached: TLS: self-signed certificate'],
    [failure('Hostname/IP does not match certificate\'s altnames', 'ERR_TLS_CERT_ALTNAME_INVALID'), 'cannot be reached: TLS: Hostname/IP does not match certificate\'s altnames'],
    [failure('connect EHOSTUNREACH 10.0.0.9:5432', 'EHOSTUNREACH'), 'cannot be reached: no route to the server (EHOSTUNREACH)'],
    [failure('no such user', '08P01'), 'cannot be reached: authentication failed: no such user (said by PgBouncer)'],
    [failure('Connection terminated unexpectedly'), 'cannot be reached: the connection was cut: Connection terminated unexpectedly'],
    [failure('sorry, too many clients already', '53300'), 'is busy: sorry, too many clients already'],
    [failure('canceling statement due to statement timeout', '57014'), 'is busy: canceling statement due to statement timeout'],
  ];
  for (const [err, said] of cases) assert.equal(unavailableMessage(err, at), `the PostgreSQL store at ${at} ${said}`, (err as Error).message);
});

test("the driver's own failures, as PostgreSQL sends them: an unknown role and a missing database", { skip: await backendSkip('postgres') }, async () => {
  const noRole = causeOf(await driverError(testUrlWith((url) => (url.username = 'no_such_role_43'))));
  // Through a pooler (the PgBouncer lane) the pooler answers for the role; the database is checked by the server it asks.
  const pooled = TEST_DATABASE_URL !== TEST_DATABASE_DIRECT_URL;
  const roleRefused = pooled ? 'authentication failed: no such user (said by PgBouncer)' : 'authentication failed: role "no_such_role_43" does not exist';
  assert.deepEqual(noRole, { connecting: true, text: roleRefused });
  const noDatabase = causeOf(await driverError(testUrlWith((url) => (url.pathname = '/no_such_database_43'))));
  assert.deepEqual(noDatabase, { connecting: true, text: 'database "no_such_database_43" does not exist' });
});

test('opening the store on a closed port fails with StoreUnavailableError naming the address and the refusal, never the password', async () => {
  const port = await closedPort();
  const err = await openStore(`postgres://u:hunter2@127.0.0.1:${port}/x`).then(
    () => assert.fail('opened'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof StoreUnavailableError, String(err));
  assert.equal(err.message, `the PostgreSQL store at 127.0.0.1:${port} cannot be reached: connection refused (is PostgreSQL running and listening there?)`);
});

test('the built CLI: serve on a closed port says where and why in one line, exit 1, the password never shown', async (t: TestContext) => {
  const port = await closedPort();
  const server = spawnServer(t, { DATABASE_URL: `postgres://u:hunter2@127.0.0.1:${port}/x` });
  assert.equal(await server.exited, 1, `${BIN} serve: ${server.stderr()}`);
  assert.equal(
    server.stderr(),
    `petstore-inventory: the PostgreSQL store at 127.0.0.1:${port} cannot be reached: connection refused (is PostgreSQL running and listening there?)\n`,
  );
  assert.doesNotMatch(server.stdout(), /hunter2/);
});
