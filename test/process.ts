import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { TestContext } from 'node:test';

export const BIN = resolve(import.meta.dirname, '..', 'bin', 'petstore-inventory');

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

/** Starts `petstore-inventory serve` on a free loopback port; killed when the test ends. */
export async function startServerProcess(
  t: TestContext,
  env: Record<string, string>,
  args: string[] = [],
): Promise<ServerProcess> {
  const proc = spawn(BIN, ['serve', ...args], {
    env: { ...process.env, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', ...env },
  });
  let out = '';
  let err = '';
  proc.stdout.on('data', (c: Buffer) => (out += c.toString()));
  proc.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const exited = new Promise<number | null>((done) => proc.on('exit', (code) => done(code)));
  t.after(() => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
  });
  const port = await new Promise<number>((done, fail) => {
    const timer = setTimeout(() => fail(new Error(`server did not start in 20 s:\n${out}\n${err}`)), 20_000);
    const look = () => {
      const m = /Server listening at http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        proc.stdout.off('data', look);
        done(Number(m[1]));
      }
    };
    proc.stdout.on('data', look);
    void exited.then((code) => fail(new Error(`server exited with ${code} before listening:\n${out}\n${err}`)));
  });
  return { proc, port, baseUrl: `http://127.0.0.1:${port}`, stdout: () => out, stderr: () => err, exited };
}
