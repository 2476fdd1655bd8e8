import { spawn, spawnSync, type ChildProcess, type StdioOptions } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { trackChild } from './lifecycle.js';

export const REPO_ROOT = resolve(import.meta.dirname, '..');
/** Runs a bench/*.ts entry point (baseline, peer) through tsx; the service itself runs its compiled build. */
export const TSX_NODE = [process.execPath, '--import', 'tsx'];

/** Which core each side runs on; undefined when taskset is missing or there is a single core. */
export type Core = 'server' | 'load';

/** Server on core 0, load generator on core 1, so the two never share a core's time. */
export const PINNING: Record<Core, string> | undefined =
  hasCommand('taskset') && availableParallelism() >= 2 ? { server: '0', load: '1' } : undefined;

export function hasCommand(name: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' }).status === 0;
}

/** How long a child's output may go on arriving after it exited before `exited` resolves anyway. */
const CLOSE_AFTER_EXIT_MS = 1000;

export interface Spawned {
  child: ChildProcess;
  /** The last few KiB of its stdout and stderr, for error messages. */
  output: () => string;
  /** Resolves once it has exited (code or signal name) and its output has been read to the end. */
  exited: Promise<string>;
}

/**
 * Starts a child, pinned to `core` when pinning is available. taskset execs the command in place,
 * so the pid is the server's own (for /proc/<pid>/status).
 */
export function spawnChild(
  command: string[],
  options: { core?: Core; env?: NodeJS.ProcessEnv; stdio?: StdioOptions } = {},
): Spawned {
  const pinned = options.core && PINNING ? ['taskset', '-c', PINNING[options.core], ...command] : command;
  const child = spawn(pinned[0]!, pinned.slice(1), {
    cwd: REPO_ROOT,
    env: options.env ?? process.env,
    stdio: options.stdio ?? ['ignore', 'pipe', 'pipe'],
  });
  trackChild(child);
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-8192);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<string>((done) => {
    // 'exit' may come before the child's pipes are read to their end (Node's documented order), and a caller reads
    // output() once this resolves (wrk's summary): so 'close', when every pipe has ended. A descendant that inherited
    // the pipes may hold them open long after the child itself is gone, so 'exit' settles it a second later at most.
    let how: string | undefined;
    child.once('exit', (code, signal) => {
      how = signal ?? String(code);
      setTimeout(() => done(how!), CLOSE_AFTER_EXIT_MS).unref();
    });
    child.once('close', (code, signal) => done(how ?? signal ?? String(code)));
    child.once('error', (err) => done(`spawn error: ${err.message}`));
  });
  return { child, output: () => output, exited };
}

/** A port nobody listens on right now (the OS picks it; we release it for the server to take). */
export async function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => done(port));
    });
  });
}

/** Polls GET /healthz until 200; fails with the child's output if it exits or takes too long. */
export async function waitUntilHealthy(baseUrl: string, spawned: Spawned, name: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exitedWith: string | undefined;
  void spawned.exited.then((how) => (exitedWith = how));
  while (Date.now() < deadline) {
    if (exitedWith !== undefined) throw new Error(`${name} exited (${exitedWith}) before it was healthy:\n${spawned.output()}`);
    const ok = await fetch(`${baseUrl}/healthz`).then(
      (res) => res.status === 200,
      () => false,
    );
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${name} was not healthy within ${timeoutMs / 1000} s:\n${spawned.output()}`);
}

/** SIGTERM, then SIGKILL if it has not exited within the grace time. */
export async function stopChild(spawned: Spawned, graceMs = 5000): Promise<void> {
  const { child } = spawned;
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await spawned.exited;
  clearTimeout(timer);
}

/** Peak resident set size (VmHWM) of a live process in bytes, or undefined where /proc is missing. */
export function peakRssBytes(pid: number | undefined): number | undefined {
  return statusBytes(pid, 'VmHWM');
}

/** Resident set size now (VmRSS) of a live process in bytes, or undefined where /proc is missing. */
export function rssBytes(pid: number | undefined): number | undefined {
  return statusBytes(pid, 'VmRSS');
}

function statusBytes(pid: number | undefined, field: 'VmHWM' | 'VmRSS'): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(status)?.[1];
    return kib === undefined ? undefined : Number(kib) * 1024;
  } catch {
    return undefined;
  }
}

/** Clock ticks a second, the unit of /proc/PID/stat's CPU times: getconf CLK_TCK, else Linux's usual 100. */
export const CLOCK_TICKS: { perSecond: number; assumed: boolean } = (() => {
  const out = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' });
  const ticks = Number(out.stdout?.trim());
  return out.status === 0 && Number.isInteger(ticks) && ticks > 0 ? { perSecond: ticks, assumed: false } : { perSecond: 100, assumed: true };
})();

/**
 * User plus system CPU time a live process has used so far, all its threads, in clock ticks
 * (utime and stime of /proc/PID/stat), or undefined where /proc is missing.
 */
export function cpuTicks(pid: number | undefined): number | undefined {
  return pid === undefined ? undefined : statTicks(`/proc/${pid}/stat`);
}

/** The same, of the process's main thread alone (/proc/PID/task/PID/stat): in Node.js, its event loop. */
export function mainThreadCpuTicks(pid: number | undefined): number | undefined {
  return pid === undefined ? undefined : statTicks(`/proc/${pid}/task/${pid}/stat`);
}

function statTicks(path: string): number | undefined {
  try {
    const stat = readFileSync(path, 'utf8');
    // The name in parentheses may hold spaces: the fields are counted after its closing one (state is field 3).
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return undefined;
  }
}

/** The executable name of a live process (to check that a pid really is node, not a shim). */
export function processName(pid: number | undefined): string | undefined {
  if (pid === undefined) return undefined;
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return undefined;
  }
}
