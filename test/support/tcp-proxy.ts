import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A TCP proxy to a database that a test can break without touching the database itself: cut it
 * (every connection dropped, new ones refused) and restore it on the same port, or freeze it
 * (every byte held in both directions, connections kept open, new ones accepted and held too: a
 * network that stops delivering, not one that refuses) and thaw it, when what was held is
 * delivered in order, ends of connections included.
 */
export class TcpProxy {
  readonly #target: { host: string; port: number };
  readonly #sockets = new Set<Socket>();
  #server: Server | undefined;
  #frozen = false;
  /** While frozen, what the proxy would have done, in order. */
  #held: (() => void)[] = [];
  port = 0;

  constructor(target: { host: string; port: number }) {
    this.#target = target;
  }

  async start(): Promise<void> {
    const server = createServer((client) => {
      const upstream = connect(this.#target.port, this.#target.host);
      for (const s of [client, upstream]) {
        this.#sockets.add(s);
        s.on('close', () => this.#sockets.delete(s));
        s.on('error', () => s.destroy());
      }
      this.#forward(client, upstream);
      this.#forward(upstream, client);
    });
    await new Promise<void>((done, fail) => {
      server.once('error', fail);
      server.listen(this.port, '127.0.0.1', () => done());
    });
    this.port = (server.address() as AddressInfo).port;
    this.#server = server;
  }

  /** Drops every connection and stops listening (anything held is forgotten). */
  async cut(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    this.#frozen = false;
    this.#held = [];
    for (const s of this.#sockets) s.destroy();
    if (server) await new Promise((done) => server.close(done));
  }

  /** Listens again on the same port. */
  async restore(): Promise<void> {
    await this.start();
  }

  /** Holds every byte from now on, both ways; connections stay open and new ones are accepted. */
  freeze(): void {
    this.#frozen = true;
  }

  /** Delivers what was held, in order, and forwards again. */
  thaw(): void {
    this.#frozen = false;
    const held = this.#held;
    this.#held = [];
    for (const action of held) action();
  }

  /** How many deliveries are held while frozen (for a test to see that something was in flight). */
  get holding(): number {
    return this.#held.length;
  }

  /** Forwards `from` to `to`: data, its end, and an abrupt close (without an end) as a drop. */
  #forward(from: Socket, to: Socket): void {
    let ended = false;
    from.on('data', (chunk: Buffer) => this.#pass(() => to.write(chunk)));
    from.on('end', () => {
      ended = true;
      this.#pass(() => to.end());
    });
    from.on('close', () => {
      if (!ended) this.#pass(() => to.destroy());
    });
  }

  #pass(action: () => void): void {
    if (this.#frozen) this.#held.push(action);
    else action();
  }
}
