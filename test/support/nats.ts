import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect as connectTcp } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { freePort } from './process.js';

const IN_CI = process.env.CI === 'true';
const NATS_SERVER = process.env.NATS_SERVER_BIN ?? 'nats-server';

/**
 * describe()'s `skip` for tests that run a NATS server of their own: a reason when the nats-server
 * binary cannot be run (said once on stderr); false when it can, or when CI=true, where the tests
 * must run and fail instead.
 */
export function natsSkip(): string | false {
  const probe = spawnSync(NATS_SERVER, ['--version'], { encoding: 'utf8' });
  if (probe.status === 0 || IN_CI) return false;
  const reason = `cannot run ${NATS_SERVER} (${probe.error?.message ?? probe.stderr.trim()})`;
  process.stderr.write(`NATS tests SKIPPED: ${reason}. Install nats-server or set NATS_SERVER_BIN.\n`);
  return reason;
}

/** A nats-server with JetStream of the test's own, on a free port, its storage in a temp folder: stopped and started again as a test needs. */
export interface TestNats {
  readonly url: string;
  /** Kills the server (SIGKILL: an outage, not a clean shutdown). */
  stop(): Promise<void>;
  /** Starts it again on the same port and storage: the stream and its messages are back. */
  start(): Promise<void>;
  /** Every message of a stream, in stream order, as a consumer reads them: subject, Nats-Msg-Id and body. */
  messages(stream: string): Promise<{ subject: string; msgId: string | undefined; body: string }[]>;
  /** The Nats-Msg-Id of the stream's last message; undefined while it has none (or no such stream yet). */
  lastMsgId(stream: string): Promise<string | undefined>;
}

export async function startTestNats(t: TestContext): Promise<TestNats> {
  const dir = await mkdtemp(join(tmpdir(), 'inventory-nats-'));
  const port = await freePort();
  let child: ChildProcess | undefined;
  const url = `nats://127.0.0.1:${port}`;
  const start = async () => {
    child = spawn(NATS_SERVER, ['-js', '-a', '127.0.0.1', '-p', String(port), '-sd', dir], { stdio: 'ignore' });
    await waitForPort(port);
  };
  const stop = async () => {
    const running = child;
    child = undefined;
    if (!running || running.exitCode !== null) return;
    const exited = once(running, 'exit');
    running.kill('SIGKILL');
    await exited;
  };
  t.after(async () => {
    await stop();
    await rm(dir, { recursive: true, force: true });
  });
  await start();
  return {
    url,
    stop,
    start,
    async messages(stream) {
      const nc = await connect({ servers: url });
      try {
        const jsm = await jetstreamManager(nc);
        const count = (await jsm.streams.info(stream)).state.messages;
        const got: { subject: string; msgId: string | undefined; body: string }[] = [];
        if (count === 0) return got;
        // An ordered consumer: every message once, in stream order.
        const consumer = await jetstream(nc).consumers.get(stream);
        const batch = await consumer.fetch({ max_messages: count, expires: 10_000 });
        for await (const m of batch) {
          got.push({ subject: m.subject, msgId: m.headers?.get('Nats-Msg-Id'), body: m.string() });
          if (got.length === count) break;
        }
        return got;
      } finally {
        await nc.close();
      }
    },
    async lastMsgId(stream) {
      const nc = await connect({ servers: url });
      try {
        const jsm = await jetstreamManager(nc);
        const state = await jsm.streams.info(stream).then((info) => info.state, () => undefined);
        if (!state || state.messages === 0) return undefined;
        return (await jsm.streams.getMessage(stream, { seq: state.last_seq }))?.header.get('Nats-Msg-Id');
      } finally {
        await nc.close();
      }
    },
  };
}

/** Until the port accepts a connection, within a deadline. */
async function waitForPort(port: number): Promise<void> {
  for (const until = Date.now() + 20_000; ; ) {
    const up = await new Promise<boolean>((resolve) => {
      const socket = connectTcp(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (up) return;
    if (Date.now() > until) throw new Error(`nats-server did not listen on ${port}`);
    await sleep(50);
  }
}
