import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { request } from 'node:http';
import { createServer, connect, type AddressInfo } from 'node:net';
import { describe, test, type TestContext } from 'node:test';
import { promisify } from 'node:util';
import { BACKENDS, backendSkip, createTestDatabase } from './support/backends.js';
import { BIN, halfSentPatch, isAlive, startServerProcess, tempDir, waitFor, type ServerProcess } from './support/process.js';

const run = promisify(execFile);

interface LogLine {
  pid: number;
  msg: string;
  role?: string;
  req?: unknown;
}

/** Runs the CLI against the database; its stdout. */
async function cli(env: Record<string, string>, ...args: string[]): Promise<string> {
  return (await run(BIN, args, { env: { ...process.env, ...env } })).stdout;
}

/** A store with a write key and pets 1..pets (quantity 0): the key. */
async function seed(env: Record<string, string>, pets: number): Promise<string> {
  const key = (await cli(env, 'keys', 'create', '--name', 'workers', '--scope', 'inventory:write')).trim();
  for (let id = 1; id <= pets; id++) await cli(env, 'pets', 'add', '--pet-id', String(id), '--status', 'available', '--quantity', '0');
  return key;
}

/** `serve --workers N`, once every worker listens. */
async function startWorkers(t: TestContext, env: Record<string, string>, workers: number, args: string[] = []): Promise<ServerProcess> {
  const server = await startServerProcess(t, env, ['--workers', String(workers), ...args]);
  // Both sides: the workers' own lines, and the primary's, which until then takes a worker's death for a failed start, not a crash.
  await waitFor(() => listeningPids(server).length === workers && primarySawListening(server) === workers, 30_000);
  return server;
}

/** How many workers the primary has seen listen ("worker listening"). */
function primarySawListening(server: ServerProcess): number {
  return logLines(server).filter((l) => l.msg === 'worker listening').length;
}

function logLines(server: ServerProcess): LogLine[] {
  return server
    .stdout()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as LogLine);
}

/** The pids of the workers that logged "Server listening", in order. */
function listeningPids(server: ServerProcess): number[] {
  return logLines(server)
    .filter((l) => l.msg.startsWith('Server listening at'))
    .map((l) => l.pid);
}

/** The processes the primary runs now. */
async function childPids(server: ServerProcess): Promise<number[]> {
  const { stdout } = await run('ps', ['--ppid', String(server.proc.pid), '-o', 'pid=']).catch(() => ({ stdout: '' }));
  return stdout.split('\n').filter((l) => l.trim() !== '').map(Number).sort(byNumber);
}


/** One request on a connection of its own, so the cluster hands each to the next worker. */
function send(server: ServerProcess, key: string, method: string, path: string, body?: object): Promise<{ status: number; text: string }> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((done, fail) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: server.port,
        method,
        path,
        agent: false,
        headers: { authorization: `Bearer ${key}`, ...(payload ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {}) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => done({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', fail);
    req.end(payload);
  });
}

function quantities(text: string): Map<number, number> {
  return new Map((JSON.parse(text) as { petId: number; quantity: number }[]).map((p) => [p.petId, p.quantity]));
}

for (const backend of BACKENDS) {
  describe(`serve --workers on ${backend}`, { skip: await backendSkip(backend) }, () => {
    test('a fresh store: one first-run banner with the shared port, demo pets once, requests served by both workers', async (t) => {
      const env = { DATABASE_URL: (await createTestDatabase(backend, t)).databaseUrl };
      const server = await startWorkers(t, env, 2, ['--demo']);
      await waitFor(() => server.stderr().includes('More keys:'));
      const banner = server.stderr();
      assert.equal(banner.match(/First run/g)?.length, 1, banner);
      const key = /^ {4}(inv_live_\S+)$/m.exec(banner)?.[1];
      assert.ok(key, banner);
      assert.match(banner, new RegExp(`curl -s http://127\\.0\\.0\\.1:${server.port}/v1/inventory `));
      assert.ok(!server.stdout().includes(key), 'the key never reaches the JSON log');

      const workers = listeningPids(server);
      assert.equal(new Set(workers).size, 2);
      assert.ok(!workers.includes(server.proc.pid!), 'the primary does not serve');
      assert.deepEqual(await childPids(server), [...workers].sort(byNumber));
      assert.match(server.stdout(), new RegExp(`"port":${server.port},"msg":"worker listening"`));

      const answers = await Promise.all(Array.from({ length: 20 }, () => send(server, key, 'GET', '/v1/inventory')));
      for (const answer of answers) {
        assert.equal(answer.status, 200);
        assert.deepEqual([...quantities(answer.text).keys()], [1, 2, 3, 4, 5], 'the demo pets, added once');
      }
      // Pino puts each worker's pid on its request lines.
      await waitFor(() => logLines(server).filter((l) => l.req !== undefined).length >= 20);
      const servedBy = new Set(logLines(server).filter((l) => l.req !== undefined).map((l) => l.pid));
      assert.deepEqual([...servedBy].sort(byNumber), [...workers].sort(byNumber));
    });

    test('concurrent PATCHes through the shared port all land; each is seen by the next GET, whichever worker answers', async (t) => {
      const env = { DATABASE_URL: (await createTestDatabase(backend, t)).databaseUrl };
      const key = await seed(env, 4);
      const server = await startWorkers(t, env, 2);

      // 200 at once over 4 pets: every one answers 200 and each pet ends at one of its values.
      const writes = Array.from({ length: 200 }, (_, i) => ({ petId: (i % 4) + 1, quantity: i }));
      const answers = await Promise.all(writes.map((w) => send(server, key, 'PATCH', `/v1/inventory/${w.petId}`, { quantity: w.quantity })));
      assert.deepEqual(
        answers.map((a) => a.status),
        writes.map(() => 200),
      );
      const afterBurst = quantities((await send(server, key, 'GET', '/v1/inventory')).text);
      for (const [petId, quantity] of afterBurst) assert.equal(quantity % 4, petId - 1, `pet ${petId} holds a value sent to it`);

      // One sequence of writes per pet, the pets at once: each ends at its last acknowledged write.
      const last = new Map<number, number>();
      await Promise.all(
        [1, 2, 3, 4].map(async (petId) => {
          for (let n = 1; n <= 25; n++) {
            const quantity = petId * 1000 + n;
            assert.equal((await send(server, key, 'PATCH', `/v1/inventory/${petId}`, { quantity })).status, 200);
            last.set(petId, quantity);
          }
        }),
      );
      assert.deepEqual(quantities((await send(server, key, 'GET', '/v1/inventory')).text), last);

      // Read-your-write across workers: each GET is a new connection, so the GETs alternate workers.
      for (let n = 1; n <= 10; n++) {
        assert.equal((await send(server, key, 'PATCH', '/v1/inventory/3', { quantity: 500 + n })).status, 200);
        assert.equal(quantities((await send(server, key, 'GET', '/v1/inventory')).text).get(3), 500 + n);
      }
      const servedBy = new Set(logLines(server).filter((l) => l.req !== undefined).map((l) => l.pid));
      assert.equal(servedBy.size, 2, 'both workers answered');
    });

    test('SIGTERM to the primary: the in-flight PATCH finishes, every worker stops, exit code 0', async (t) => {
      const env = { DATABASE_URL: (await createTestDatabase(backend, t)).databaseUrl };
      const key = await seed(env, 1);
      const server = await startWorkers(t, env, 2);
      const workers = listeningPids(server);

      // Headers and half the body, the signal, then the rest of the body.
      const patch = await halfSentPatch(server.port, '/v1/inventory/1', key, '{"quantity": 42}');
      await waitFor(() => logLines(server).some((l) => l.req !== undefined));
      server.proc.kill('SIGTERM');
      await waitFor(() => logLines(server).filter((l) => l.msg.startsWith('shutting down: finishing')).length === 2);
      patch.finish();
      await patch.closed;
      assert.match(patch.response(), /^HTTP\/1\.1 200 /);
      assert.equal(await server.exited, 0, server.stdout());
      assert.deepEqual(
        workers.filter((pid) => isAlive(pid)),
        [],
      );
      assert.match(server.stdout(), /"msg":"all workers stopped"/);
      assert.match(await cli(env, 'pets', 'list', '--json'), /"quantity":42/, 'the acknowledged write is on disk');
    });

    test('a worker that dies is restarted on the same port; SIGINT then stops them all', async (t) => {
      const env = { DATABASE_URL: (await createTestDatabase(backend, t)).databaseUrl };
      const key = await seed(env, 1);
      const server = await startWorkers(t, env, 2);
      const [victim, survivor] = listeningPids(server) as [number, number];
      process.kill(victim, 'SIGKILL');
      await waitFor(() => listeningPids(server).length === 3, 30_000);
      const replacement = listeningPids(server)[2]!;
      assert.ok(![victim, survivor].includes(replacement));
      assert.match(server.stdout(), new RegExp(`"workerPid":${victim},"code":null,"signal":"SIGKILL","delayMs":\\d+,"msg":"worker exited unexpectedly; restarting it"`));
      assert.deepEqual(await childPids(server), [survivor, replacement].sort(byNumber));
      assert.equal(listeningPortLines(server).size, 1, 'one port for all');
      for (let n = 0; n < 4; n++) assert.equal((await send(server, key, 'GET', '/v1/inventory')).status, 200);

      server.proc.kill('SIGINT');
      assert.equal(await server.exited, 0, server.stdout());
      assert.ok(!isAlive(survivor) && !isAlive(replacement));
    });
  });
}

describe('serve --workers, whatever the backend', () => {
  test('a bad --workers or WORKERS stops it with a message naming it, before anything starts', async (t) => {
    const env = { ...process.env, DATABASE_URL: `sqlite:${tempDir(t)}/inventory.db` };
    for (const args of [['--workers', '0'], ['--workers=-1'], ['--workers', '-1'], ['--workers', 'abc'], ['--workers', '65'], ['--workers', '1.5']]) {
      await assert.rejects(run(BIN, ['serve', ...args], { env }), (err: { code: number; stderr: string }) => {
        assert.equal(err.code, 2, args.join(' '));
        assert.match(err.stderr, /--workers/, args.join(' '));
        return true;
      });
    }
    await assert.rejects(run(BIN, ['serve'], { env: { ...env, WORKERS: 'abc' } }), (err: { code: number; stderr: string }) => {
      assert.equal(err.code, 2);
      assert.match(err.stderr, /^petstore-inventory: WORKERS must be a whole number from 1 to 64, or "auto"/);
      return true;
    });
    const help = await run(BIN, ['serve', '--help']);
    assert.match(help.stdout, /--workers N\|auto/);
  });

  test('WORKERS=2 from the environment, as --workers 2', async (t) => {
    const server = await startServerProcess(t, { DATABASE_URL: `sqlite:${tempDir(t)}/inventory.db`, WORKERS: '2' });
    await waitFor(() => listeningPids(server).length === 2, 30_000);
    server.proc.kill('SIGTERM');
    assert.equal(await server.exited, 0);
  });

  test('sqlite::memory: is refused: the workers would not share it', async () => {
    await assert.rejects(
      run(BIN, ['serve', '--workers', '2'], { env: { ...process.env, DATABASE_URL: 'sqlite::memory:' } }),
      (err: { code: number; stderr: string }) => {
        assert.equal(err.code, 2);
        assert.match(err.stderr, /--workers above 1 needs a store the workers share/);
        return true;
      },
    );
  });

  test('a worker that cannot listen (an address not on this machine) makes the primary exit 1 instead of restarting it', async (t) => {
    // 192.0.2.1 is reserved for documentation (RFC 5737): no machine has it, so binding it fails in each worker.
    const env = { ...process.env, DATABASE_URL: `sqlite:${tempDir(t)}/inventory.db`, HOST: '192.0.2.1', PORT: '0' };
    await assert.rejects(run(BIN, ['serve', '--workers', '2'], { env }), (err: { code: number; stderr: string; stdout: string }) => {
      assert.equal(err.code, 1);
      assert.match(err.stderr, /EADDRNOTAVAIL/);
      assert.match(err.stderr, /worker \d+ exited with code 1 before it listened; stopping/);
      assert.doesNotMatch(err.stdout, /restarting/);
      return true;
    });
  });

  test('a port in use: the primary says so in one line, naming it and how to choose another, before it starts any worker; exit 1', async (t) => {
    const taken = createServer();
    await new Promise<void>((done) => taken.listen(0, '127.0.0.1', done));
    t.after(() => taken.close());
    const port = (taken.address() as AddressInfo).port;
    const env = { ...process.env, DATABASE_URL: `sqlite:${tempDir(t)}/inventory.db`, HOST: '127.0.0.1', PORT: String(port) };
    await assert.rejects(run(BIN, ['serve', '--workers', '2'], { env }), (err: { code: number; stderr: string; stdout: string }) => {
      assert.equal(err.code, 1);
      assert.equal(err.stderr, `petstore-inventory: port ${port} is already in use; choose another: PORT=${port + 1} npm start (or serve --port ${port + 1})\n`);
      assert.doesNotMatch(err.stdout, /starting workers/);
      return true;
    });
  });

  test('workers that do not finish within SHUTDOWN_TIMEOUT_MS: exit code 1', async (t) => {
    const env = { DATABASE_URL: `sqlite:${tempDir(t)}/inventory.db`, SHUTDOWN_TIMEOUT_MS: '300' };
    const key = await seed(env, 1);
    const server = await startWorkers(t, env, 2);
    const socket = connect(server.port, '127.0.0.1');
    socket.on('error', () => {});
    await new Promise((done) => socket.on('connect', done));
    // A request whose body never comes keeps its worker busy past the timeout.
    socket.write(`PATCH /v1/inventory/1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 16\r\n\r\n{"qu`);
    await waitFor(() => logLines(server).some((l) => l.req !== undefined));
    server.proc.kill('SIGTERM');
    assert.equal(await server.exited, 1);
    socket.destroy();
  });
});

/** The ports the "Server listening" lines name. */
function listeningPortLines(server: ServerProcess): Set<string> {
  return new Set([...server.stdout().matchAll(/Server listening at http:\/\/127\.0\.0\.1:(\d+)/g)].map((m) => m[1]!));
}

function byNumber(a: number, b: number): number {
  return a - b;
}


