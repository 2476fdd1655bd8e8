import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { connect, createServer } from 'node:net';
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { TestContext } from 'node:test';
import { TEST_STORE_DIRECT_URL } from './admin-query.js';

export const BIN = resolve(import.meta.dirname, '..', '..', 'bin', 'petstore-inventory');

export interface ServerProcess {
  proc: ChildProcessWithoutNullStreams;
  /** The port it listens on, read from its "Server listening" log line. */
  port: number;
  baseUrl: string;
  /** Everything it wrote so far. */
  stdout: () => string;
  stderr: () => string;
  /** Resolves with the exit code once it has exited. */
  exited: Promise<number | null>;
}

/** A fresh directory for a test's database files, removed when the test ends. */
export function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'inventory-test-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Spawns `petstore-inventory serve` (on a free loopback port unless `env` names one), its output kept, with no drain on SIGTERM unless `env` sets SHUTDOWN_DRAIN_MS; killed when the test ends. */
export function spawnServer(t: TestContext, env: Record<string, string>, args: string[] = []): Omit<ServerProcess, 'port' | 'baseUrl'> {
  const proc = spawn(BIN, ['serve', ...args], {
    env: { ...process.env, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', SHUTDOWN_DRAIN_MS: '0', ...directUrlFor(env), ...env },
  });
  let out = '';
  let err = '';
  proc.stdout.on('data', (c: Buffer) => (out += c.toString()));
  proc.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const exited = new Promise<number | null>((done) => proc.on('exit', (code) => done(code)));
  t.after(() => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
  });
  return { proc, stdout: () => out, stderr: () => err, exited };
}

/** Starts `petstore-inventory serve` on a free loopback port; killed when the test ends. */
export async function startServerProcess(
  t: TestContext,
  env: Record<string, string>,
  args: string[] = [],
): Promise<ServerProcess> {
  const { proc, stdout, stderr, exited } = spawnServer(t, env, args);
  const port = await new Promise<number>((done, fail) => {
    const timer = setTimeout(() => fail(new Error(`server did not start in 20 s:\n${stdout()}\n${stderr()}`)), 20_000);
    const look = () => {
      const m = /Server listening at http:\/\/127\.0\.0\.1:(\d+)/.exec(stdout());
      if (m) {
        clearTimeout(timer);
        proc.stdout.off('data', look);
        done(Number(m[1]));
      }
    };
    proc.stdout.on('data', look);
    void exited.then((code) => fail(new Error(`server exited with ${code} before listening:\n${stdout()}\n${stderr()}`)));
  });
  return { proc, port, baseUrl: `http://127.0.0.1:${port}`, stdout, stderr, exited };
}

/**
 * The shortest timeout a unit test may count on being met when something must finish in time (a
 * turn or two of the event loop): on a loaded CI machine one stall took over 40 ms. A test that only
 * waits a timeout out may use a shorter one.
 */
export const IN_TIME_MS = 250;

export function sleep(ms: number): Promise<void> {
  return new Promise((done) => setTimeout(done, ms));
}

/** How long `until` waits by default: a deadline on waiting, so a wait that never ends names itself, never a measure of speed. */
export const UNTIL_TIMEOUT_MS = 20_000;

/**
 * Resolves once `condition` holds, checking every `everyMs` (20); fails naming `what` once
 * `timeoutMs` (UNTIL_TIMEOUT_MS) passed without it.
 */
export async function until(
  condition: () => Promise<boolean> | boolean,
  what = 'a condition',
  { timeoutMs = UNTIL_TIMEOUT_MS, everyMs = 20 }: { timeoutMs?: number; everyMs?: number } = {},
): Promise<void> {
  for (const giveUpAt = Date.now() + timeoutMs; !(await condition()); await sleep(everyMs)) {
    if (Date.now() > giveUpAt) throw new Error(`${what}: still not so after ${timeoutMs} ms`);
  }
}

/** `promise`, or a failure naming `what` once `timeoutMs` passed without it settling: a deadline on waiting, never a measure of speed. */
export async function withDeadline<T>(promise: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, fail) => {
    timer = setTimeout(() => fail(new Error(`${what}: nothing after ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** `until` for a condition that needs no await, with its own default deadline. */
export function waitFor(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  return until(condition, 'a condition', { timeoutMs });
}

/** A PATCH sent over a raw socket with its headers and only the first 5 bytes of `body`: a request in flight on purpose. */
export interface HalfSentPatch {
  /** Sends the rest of the body. */
  finish(): void;
  /** Resolves when the server has closed the connection. */
  closed: Promise<unknown>;
  /** Everything the server answered so far. */
  response(): string;
}

export async function halfSentPatch(port: number, path: string, key: string, body: string): Promise<HalfSentPatch> {
  const socket = connect(port, '127.0.0.1');
  let response = '';
  socket.on('data', (c: Buffer) => (response += c.toString()));
  const closed = new Promise((done) => socket.on('close', done));
  await new Promise((done) => socket.on('connect', done));
  socket.write(
    `PATCH ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${body.length}\r\nConnection: close\r\n\r\n${body.slice(0, 5)}`,
  );
  return { finish: () => socket.write(body.slice(5)), closed, response: () => response };
}

/**
 * describe()'s `skip` for tests that run a program the machine may lack: a reason when `path` is not
 * an executable (said on stderr, with how to install it), false when it is, or under CI=true, where
 * the tests must run and fail instead.
 */
export function missingToolSkip(tests: string, path: string, install: string): string | false {
  try {
    accessSync(path, constants.X_OK);
    return false;
  } catch {
    if (process.env.CI === 'true') return false;
    process.stderr.write(`${tests} SKIPPED: no ${path} (${install}).\n`);
    return `no ${path}`;
  }
}

/** A loopback port nobody listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/** Whether a process of this pid still runs (signal 0 only asks). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** DATABASE_DIRECT_URL for a server on PostgreSQL when the run gives stores one (TEST_STORE_DIRECT_URL). */
function directUrlFor(env: Record<string, string>): Record<string, string> {
  const postgres = /^postgres(ql)?:/.test(env.DATABASE_URL ?? '');
  return postgres && TEST_STORE_DIRECT_URL !== undefined ? { DATABASE_DIRECT_URL: TEST_STORE_DIRECT_URL } : {};
}
