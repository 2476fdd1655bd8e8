import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { connect } from 'node:net';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { BIN, isAlive, startServerProcess, waitFor } from '../support/process.js';
import { runCli } from '../support/cli.js';

const PACKAGE_VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;



/** A temp dir and a DATABASE_URL naming a SQLite file in it that does not exist yet. */
function tempStore(t: TestContext): { dir: string; file: string; env: Record<string, string> } {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-cli-polish-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'inventory.db');
  return { dir, file, env: { DATABASE_URL: `sqlite:${file}` } };
}

test('every usage error names the program once, at the start of its one line', async (t) => {
  const { env } = tempStore(t);
  const cases: [string[], string][] = [
    [[], 'no command given: use serve, keys, pets, events, webhooks, reservations (see "petstore-inventory --help")'],
    [['feed'], 'unknown command "feed": use serve, keys, pets, events, webhooks, reservations (see "petstore-inventory --help")'],
    [['events'], 'events needs a command: use tail (see "petstore-inventory events --help")'],
    [['events', 'follow'], 'events has no command "follow": use tail (see "petstore-inventory events --help")'],
    [['pets'], 'pets needs a command: use add, list, adjust, import, export, remove, history (see "petstore-inventory pets --help")'],
    [['pets', 'feed'], 'pets has no command "feed": use add, list, adjust, import, export, remove, history (see "petstore-inventory pets --help")'],
    [['keys'], 'keys needs a command: use create, list, revoke (see "petstore-inventory keys --help")'],
    [['keys', 'delete'], 'keys has no command "delete": use create, list, revoke (see "petstore-inventory keys --help")'],
    [['--version', 'x'], '--version takes no arguments'],
  ];
  for (const [argv, message] of cases) {
    const r = await runCli(env, ...argv);
    assert.deepEqual(r, { code: 2, out: '', err: `petstore-inventory: ${message}\n` }, argv.join(' '));
  }
});

test('--version and -V print package.json\'s version, in-process and from the built bin', async (t) => {
  const { env } = tempStore(t);
  for (const flag of ['--version', '-V']) {
    assert.deepEqual(await runCli(env, flag), { code: 0, out: `${PACKAGE_VERSION}\n`, err: '' });
    const { stdout, stderr } = await promisify(execFile)(BIN, [flag]);
    assert.deepEqual([stdout, stderr], [`${PACKAGE_VERSION}\n`, '']);
  }
  assert.match((await runCli(env, '--help')).out, /^ {2}-V, --version {2}print the version$/m);
});

test('a negative number is a value: --pet-id -5, --pet-id=-5, and a positional pet ID', async (t) => {
  const { env } = tempStore(t);
  const add = await runCli(env, 'pets', 'add', '--pet-id', '-5', '--status', 'sold', '--quantity', '2');
  assert.deepEqual(add, { code: 0, out: '{"petId":-5,"quantity":2,"status":"sold"}\n', err: add.err });
  assert.equal((await runCli(env, 'pets', 'add', '--pet-id=-9223372036854775808', '--status', 'pending')).code, 0);
  assert.equal((await runCli(env, 'pets', 'add', '--status', 'available', '--pet-id', '-7')).code, 0);
  assert.equal(
    (await runCli(env, 'pets', 'list', '--json')).out,
    '[{"petId":-9223372036854775808,"quantity":0,"status":"pending"},{"petId":-7,"quantity":0,"status":"available"},' +
      '{"petId":-5,"quantity":2,"status":"sold"}]\n',
  );

  for (const argv of [['-5'], ['-5', '--limit', '2'], ['--limit=2', '-5'], ['--limit', '3', '-5'], ['--', '-5']]) {
    const r = await runCli(env, 'pets', 'history', ...argv);
    assert.deepEqual([r.code, r.out], [0, 'No changes of pet -5 yet.\n'], `${argv.join(' ')}: ${r.err}`);
  }
  assert.deepEqual(await runCli(env, 'pets', 'history', '--json', '-5'), { code: 0, out: '{"items":[],"nextCursor":null}\n', err: '' });

  // Taken as the option's value, a negative number is checked by that option's own rule.
  const bad: [string[], RegExp][] = [
    [['pets', 'add', '--pet-id', '-05', '--status', 'sold'], /^petstore-inventory: --pet-id must be a decimal integer .*\(got "-05"\)\n$/],
    [['pets', 'add', '--pet-id', '6', '--status', 'sold', '--quantity', '-3'], /^petstore-inventory: --quantity must be an integer from 0 .*\(got "-3"\)\n$/],
    [['pets', 'add', '--pet-id', '-9223372036854775809', '--status', 'sold'], /^petstore-inventory: --pet-id must be .*\(got "-9223372036854775809"\)\n$/],
    [['pets', 'history', '-5', '--limit', '-1'], /^petstore-inventory: --limit must be a whole number from 1 .*\(got "-1"\)\n$/],
    [['pets', 'history', '-5', '-6'], /^petstore-inventory: pets history takes exactly one pet ID\n$/],
    [['pets', 'history', '-05'], /^petstore-inventory: pet ID must be an int64 .*\(got "-05"\)\n$/],
    [['pets', 'list', '-5'], /^petstore-inventory: Unknown option '-5'/],
  ];
  for (const [argv, message] of bad) {
    const r = await runCli(env, ...argv);
    assert.equal(r.code, 2, `${argv.join(' ')}: ${r.err}`);
    assert.equal(r.out, '');
    assert.match(r.err, message);
  }
});

test('a command that only reads creates no store: it fails naming the absolute path and DATABASE_URL', async (t) => {
  const { dir, file, env } = tempStore(t);
  const message =
    `petstore-inventory: no store at ${file} (DATABASE_URL=sqlite:${file}): set DATABASE_URL=sqlite:/path/to/inventory.db to use another; ` +
    '"serve", "keys create", "pets add", "pets import" or "webhooks add" makes a new one\n';
  for (const argv of [['pets', 'list'], ['pets', 'list', '--json'], ['pets', 'history', '5'], ['pets', 'history', '5', '--json'], ['keys', 'list'], ['keys', 'list', '--json'], ['keys', 'revoke', 'key_x']]) {
    assert.deepEqual(await runCli(env, ...argv), { code: 1, out: '', err: message }, argv.join(' '));
  }
  assert.deepEqual(readdirSync(dir), [], 'nothing was created');
  // :memory: is a new store on every open, never a file left behind.
  assert.deepEqual(await runCli({ DATABASE_URL: 'sqlite::memory:' }, 'pets', 'list', '--json'), { code: 0, out: '[]\n', err: '' });
});

test('the default store is looked for in the working directory, and the message says so', async (t) => {
  const { dir } = tempStore(t);
  const env = { ...process.env };
  delete env.DATABASE_URL;
  const r = await promisify(execFile)(BIN, ['pets', 'list'], { cwd: dir, env }).then(
    () => assert.fail('pets list succeeded'),
    (err: { code: number; stdout: string; stderr: string }) => err,
  );
  assert.equal(r.code, 1);
  assert.equal(r.stdout, '');
  assert.equal(
    r.stderr,
    `petstore-inventory: no store at ${join(dir, 'data', 'inventory.db')} (DATABASE_URL is the default, sqlite:./data/inventory.db, ` +
      'relative to the working directory): set DATABASE_URL=sqlite:/path/to/inventory.db to use another; ' +
      '"serve", "keys create", "pets add", "pets import" or "webhooks add" makes a new one\n',
  );
  assert.deepEqual(readdirSync(dir), [], 'no data/ directory either');
});

test('a command that writes creates the store and says where, the first time only', async (t) => {
  const { file, env } = tempStore(t);
  const created = `Created a new store at ${file}\n`;
  const first = await runCli(env, 'keys', 'create', '--name', 'first');
  assert.equal(first.code, 0, first.err);
  assert.ok(first.err.startsWith(created), first.err);
  assert.ok(existsSync(file));
  const second = await runCli(env, 'keys', 'create', '--name', 'second');
  assert.equal(second.code, 0, second.err);
  assert.ok(!second.err.includes('Created a new store'), second.err);
  assert.equal((await runCli(env, 'keys', 'list')).code, 0);

  const other = tempStore(t);
  const add = await runCli(other.env, 'pets', 'add', '--pet-id', '1', '--status', 'sold');
  assert.deepEqual(add, { code: 0, out: '{"petId":1,"quantity":0,"status":"sold"}\n', err: `Created a new store at ${other.file}\n` });
  assert.equal((await runCli(other.env, 'pets', 'add', '--pet-id', '2', '--status', 'sold')).err, '');
  // A call refused before the store is needed creates none.
  const refused = tempStore(t);
  assert.equal((await runCli(refused.env, 'pets', 'add', '--pet-id', '1')).code, 2);
  assert.ok(!existsSync(refused.file));
});

test('serve creates the store, says where before the first-run key, and not on the next start', async (t) => {
  const { file, env } = tempStore(t);
  const server = await startServerProcess(t, env);
  await waitFor(() => server.stderr().includes('More keys:'));
  assert.ok(server.stderr().startsWith(`Created a new store at ${file}\n\nFirst run:`), server.stderr());
  server.proc.kill('SIGTERM');
  assert.equal(await server.exited, 0);
  const again = await startServerProcess(t, env);
  assert.equal((await fetch(`${again.baseUrl}/healthz`)).status, 200);
  assert.equal(again.stderr(), '');
});

test('npm start passes SIGTERM on to the server: it stops cleanly and leaves no process behind', async (t) => {
  const { env } = tempStore(t);
  const npm = spawn('npm', ['start'], {
    cwd: fileURLToPath(new URL('../..', import.meta.url)),
    env: { ...process.env, ...env, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', SHUTDOWN_DRAIN_MS: '0', npm_config_update_notifier: 'false' },
  });
  let out = '';
  npm.stdout.on('data', (c: Buffer) => (out += c.toString()));
  npm.stderr.resume();
  const npmExited = new Promise((done) => npm.on('exit', done));
  t.after(() => npm.kill('SIGKILL'));
  await waitFor(() => /Server listening at/.test(out), 20_000);
  const listening = JSON.parse(out.split('\n').find((line) => line.includes('Server listening at'))!) as { pid: number; msg: string };
  const serverPid = listening.pid;
  t.after(() => {
    if (isAlive(serverPid)) process.kill(serverPid, 'SIGKILL');
  });
  const port = Number(/:(\d+)$/.exec(listening.msg)![1]);
  assert.notEqual(serverPid, npm.pid, 'the server is a child of npm');
  assert.equal((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200);

  npm.kill('SIGTERM');
  await waitFor(() => !isAlive(serverPid), 5000);
  await npmExited;
  assert.match(out, /shut down cleanly/);
  await assert.rejects(fetch(`http://127.0.0.1:${port}/healthz`), 'the port is closed');
});

/**
 * Ctrl-C in a terminal: the terminal sends SIGINT to the whole foreground process group, so the
 * server gets it from the terminal and again from npm, which forwards its own copy (decisions 7.5).
 */
for (const args of [[], ['--workers', '2']]) {
  test(`Ctrl-C on npm start${args.length ? ` -- ${args.join(' ')}` : ''}: SIGINT to the process group drains once and exits 0`, async (t) => {
    const { env } = tempStore(t);
    // A process group of its own, as a terminal gives the command it runs in the foreground.
    const npm = spawn('npm', ['start', ...(args.length ? ['--', ...args] : [])], {
      cwd: fileURLToPath(new URL('..', import.meta.url)),
      detached: true,
      env: { ...process.env, ...env, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', npm_config_update_notifier: 'false' },
    });
    let out = '';
    npm.stdout.on('data', (c: Buffer) => (out += c.toString()));
    npm.stderr.resume();
    const exited = new Promise<number | null>((done) => npm.on('exit', (code) => done(code)));
    t.after(() => {
      try {
        process.kill(-npm.pid!, 'SIGKILL');
      } catch {
        // The group has exited.
      }
    });
    const processes = args.length ? 2 : 1;
    await waitFor(() => out.split('Server listening at').length - 1 === processes, 30_000);
    if (args.length) await waitFor(() => out.split('"worker listening"').length - 1 === processes);
    const port = Number(/Server listening at http:\/\/127\.0\.0\.1:(\d+)/.exec(out)![1]);
    // A connection kept open holds the drain until npm's copy of the signal has arrived.
    const socket = connect(port, '127.0.0.1');
    await new Promise((done) => socket.once('data', done).write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'));

    process.kill(-npm.pid!, 'SIGINT');
    await waitFor(() => out.includes('shutting down'));
    // The kernel does not queue a signal already pending: on a busy machine the two copies may reach the server as one.
    const copySeen = await waitFor(() => out.includes('the same signal again at once: already shutting down'), 2000).then(
      () => true,
      () => false,
    );
    t.diagnostic(copySeen ? 'the server got SIGINT twice' : 'the two SIGINTs reached the server as one');
    socket.destroy();
    assert.equal(await exited, 0, out.slice(-2000));
    assert.doesNotMatch(out, /second signal/);
    assert.match(out, args.length ? /"exitCode":0,"msg":"all workers stopped"/ : /"msg":"shut down cleanly"/);
  });
}

