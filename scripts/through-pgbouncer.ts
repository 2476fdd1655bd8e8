// Runs a command with the tests' PostgreSQL behind a PgBouncer in transaction mode of its own (test/support/pgbouncer.ts):
// TEST_DATABASE_URL names the server through it, TEST_DATABASE_DIRECT_URL the server itself; PgBouncer stops when the
// command ends, whose exit status this one's is. .ci/test-through-pgbouncer uses it.
//
//   node --import tsx scripts/through-pgbouncer.ts COMMAND [ARG]...
import { spawn } from 'node:child_process';
import process from 'node:process';
import { TEST_DATABASE_DIRECT_URL } from '../test/support/admin-query.js';
import { launchPgBouncer } from '../test/support/pgbouncer.js';

const [command, ...args] = process.argv.slice(2);
if (command === undefined) throw new Error('through-pgbouncer: a command to run is needed');
const bouncer = await launchPgBouncer(TEST_DATABASE_DIRECT_URL);
process.stdout.write(`::: PgBouncer in transaction mode at ${bouncer.url()}\n`);
const child = spawn(command, args, {
  stdio: 'inherit',
  env: { ...process.env, TEST_DATABASE_URL: bouncer.url(), TEST_DATABASE_DIRECT_URL },
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
const code = await new Promise<number>((resolve) => child.on('exit', (status) => resolve(status ?? 1)));
if (code !== 0) process.stderr.write(`::: PgBouncer's warnings and errors\n${bouncer.log()}\n`);
await bouncer.stop();
process.exit(code);
