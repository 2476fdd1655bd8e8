import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import type { TestContext } from 'node:test';
import { freePort, missingToolSkip, waitFor } from '../support/process.js';

export const HAPROXY = '/usr/sbin/haproxy';
/** The configuration the docs show (docs/deployment.md, "Behind a load balancer"), run as it is. */
export const HAPROXY_CONFIG = resolve(import.meta.dirname, '..', '..', 'deploy', 'haproxy.cfg');

/** describe()'s `skip` for the drill (missingToolSkip). */
export function haproxySkip(): string | false {
  return missingToolSkip('HAProxy drill', HAPROXY, 'apt-get install haproxy');
}

/** A HAProxy process in the foreground on a free loopback port, in front of three instances; killed when the test ends. */
export interface Balancer {
  baseUrl: string;
  /** Everything it wrote: its log, and the servers' state changes ("Server instances/instance-2 is DOWN"). */
  output: () => string;
  /** Resolves once HAProxy has said `server` (instance-1..3) went `state` more than `seen` times. */
  until: (server: string, state: 'UP' | 'DOWN', seen?: number) => Promise<void>;
  /** How many times HAProxy has said so. */
  count: (server: string, state: 'UP' | 'DOWN') => number;
}

export async function startBalancer(t: TestContext, instances: readonly string[], deadlineMs: number): Promise<Balancer> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = { ...process.env, LB_BIND: `127.0.0.1:${port}` };
  instances.forEach((address, i) => (env[`INSTANCE_${i + 1}`] = address));
  // -db: in the foreground, no daemon; its own process, never the system's service.
  const proc = spawn(HAPROXY, ['-db', '-f', HAPROXY_CONFIG], { env });
  let output = '';
  proc.stdout.on('data', (c: Buffer) => (output += c.toString()));
  proc.stderr.on('data', (c: Buffer) => (output += c.toString()));
  const exited = new Promise<number | null>((done) => proc.on('exit', (code) => done(code)));
  t.after(async () => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
    await exited;
  });
  const count = (server: string, state: 'UP' | 'DOWN') => output.split(`Server instances/${server} is ${state}`).length - 1;
  const balancer: Balancer = {
    baseUrl: `http://127.0.0.1:${port}`,
    output: () => output,
    count,
    until: (server, state, seen = 0) => waitFor(() => count(server, state) > seen, deadlineMs).catch(() => {
      throw new Error(`HAProxy did not see ${server} ${state} within ${deadlineMs} ms:\n${output.slice(-3000)}`);
    }),
  };
  // Servers start UP; ready once it answers through them.
  const startedAt = Date.now();
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`haproxy exited with ${proc.exitCode}:\n${output}`);
    const ok = await fetch(`${balancer.baseUrl}/readyz`).then((r) => r.ok, () => false);
    if (ok) return balancer;
    if (Date.now() - startedAt > deadlineMs) throw new Error(`haproxy did not answer within ${deadlineMs} ms:\n${output}`);
    await new Promise((done) => setTimeout(done, 100));
  }
}
