import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { TestContext } from 'node:test';
import { Webhook } from 'standardwebhooks';

/** How long waitFor waits before it gives up: a deadline on waiting for what must come, never a measure of speed. */
const LIVENESS_MS = 60_000;

/** One request a receiver got. */
export interface Received {
  headers: IncomingMessage['headers'];
  body: string;
  /** The parsed body. */
  json: { id: string; type: string; seq?: number; data: Record<string, unknown> };
  at: number;
  /** Its place in the receiver's one sequence of arrivals and answers, so order is told without clocks ... */
  arrived: number;
  /** ... and when it was answered; undefined until then (or never: `hang`, `drop`). */
  answered?: number;
  /** Resolves when its connection closes: for a request left hanging, the moment the sender gives up on it. */
  closed: Promise<void>;
}

/** How the receiver answers one request: a status (and headers, once `until` resolved and `delayMs` passed), or `hang` (never answers), or `drop` (closes the connection). */
export type Answer = { status: number; headers?: Record<string, string>; delayMs?: number; until?: Promise<unknown> } | 'hang' | 'drop';

/** A local webhook receiver: it records what it gets, answers as `answer` says, and verifies signatures as a receiver using the reference library would. */
export interface Receiver {
  url: string;
  port: number;
  received: Received[];
  /** Requests being answered right now, and the most there ever were at once. */
  concurrency: { now: number; max: number };
  /** What the next requests get; by default 204. */
  answer: (request: Received, index: number) => Answer;
  /** Resolves once `count` requests came (or `predicate` holds); rejects, saying how many came, after LIVENESS_MS without. */
  waitFor(predicate: number | ((received: Received[]) => boolean)): Promise<void>;
  /** Whether the standardwebhooks library accepts this request under `secret`. */
  verifies(request: Received, secret: string): boolean;
  /** Stops listening and drops every connection; `listen()` again on the same port. */
  close(): Promise<void>;
  listen(): Promise<void>;
}

/** Starts a receiver on 127.0.0.1 (a free port, or `port`); closed when the test ends. */
export async function startReceiver(t: TestContext, port = 0): Promise<Receiver> {
  let server: Server;
  let step = 0;
  const sockets = new Set<Socket>();
  const waiters = new Set<() => void>();
  const receiver: Receiver = {
    url: '',
    port,
    received: [],
    concurrency: { now: 0, max: 0 },
    answer: () => ({ status: 204 }),
    waitFor(predicate) {
      const done = typeof predicate === 'number' ? (r: Received[]) => r.length >= predicate : predicate;
      if (done(receiver.received)) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`the receiver waited ${LIVENESS_MS} ms for ${typeof predicate === 'number' ? `${predicate} requests` : 'its condition'}; ${receiver.received.length} came`));
        }, LIVENESS_MS);
        const check = () => {
          if (!done(receiver.received)) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve();
        };
        waiters.add(check);
      });
    },
    verifies(request, secret) {
      try {
        new Webhook(secret).verify(request.body, request.headers as Record<string, string>);
        return true;
      } catch {
        return false;
      }
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
    async listen() {
      server = createServer((req, res) => void handle(req, res));
      server.on('connection', (socket) => {
        sockets.add(socket);
        socket.on('close', () => sockets.delete(socket));
      });
      server.listen(receiver.port, '127.0.0.1');
      await once(server, 'listening');
      receiver.port = (server.address() as AddressInfo).port;
      receiver.url = `http://127.0.0.1:${receiver.port}/hooks`;
    },
  };
  async function handle(req: IncomingMessage, res: ServerResponse) {
    receiver.concurrency.now++;
    receiver.concurrency.max = Math.max(receiver.concurrency.max, receiver.concurrency.now);
    let body = '';
    for await (const chunk of req) body += (chunk as Buffer).toString();
    const closed = new Promise<void>((resolve) => req.socket.once('close', () => resolve()));
    const request: Received = { headers: req.headers, body, json: JSON.parse(body) as Received['json'], at: Date.now(), arrived: step++, closed };
    const answer = receiver.answer(request, receiver.received.length);
    receiver.received.push(request);
    for (const waiter of [...waiters]) waiter();
    if (answer === 'hang') return;
    if (answer !== 'drop' && answer.until !== undefined) await answer.until;
    if (answer !== 'drop' && answer.delayMs !== undefined) await new Promise((resolve) => setTimeout(resolve, answer.delayMs));
    receiver.concurrency.now--;
    if (answer === 'drop') return void req.socket.destroy();
    request.answered = step++;
    res.writeHead(answer.status, answer.headers).end();
  }
  await receiver.listen();
  t.after(() => receiver.close());
  return receiver;
}
