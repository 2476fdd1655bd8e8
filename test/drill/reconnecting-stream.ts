import { StreamClient } from '../support/event-stream.js';

/**
 * An event stream read through the balancer as a client should: when it ends (its instance died or
 * drains), it is opened again with Last-Event-ID, the seq of the last event received. Every event
 * received, over every connection, is kept in order.
 */
export class ReconnectingStream {
  readonly seqs: number[] = [];
  /** Connections opened after the first. */
  reconnects = 0;
  /** Opening attempts answered other than 200, or failed. */
  refusals = 0;
  /** Resolves once the first connection is open. */
  readonly opened: Promise<void>;
  #markOpened: () => void = () => {};
  #stopped = false;
  #current: StreamClient | undefined;
  readonly #done: Promise<void>;

  constructor(baseUrl: string, key: string, after: number) {
    this.opened = new Promise((done) => (this.#markOpened = done));
    this.#done = this.#run(baseUrl, key, after);
  }

  /** The last seq received, or undefined. */
  get last(): number | undefined {
    return this.seqs.at(-1);
  }

  async close(): Promise<void> {
    this.#stopped = true;
    this.#current?.close();
    await this.#done;
  }

  async #run(baseUrl: string, key: string, after: number): Promise<void> {
    for (let opened = 0; !this.#stopped; ) {
      const headers: Record<string, string> = this.last === undefined ? {} : { 'last-event-id': String(this.last) };
      const client = (this.#current = new StreamClient(baseUrl, { key, query: `?after=${after}`, headers }));
      try {
        await client.opened();
      } catch {
        this.refusals++;
        await sleep(200);
        continue;
      }
      if (client.status !== 200) {
        this.refusals++;
        client.close();
        await sleep(200);
        continue;
      }
      if (opened++ > 0) this.reconnects++;
      else this.#markOpened();
      let taken = 0;
      const take = () => {
        const events = client.events;
        for (; taken < events.length; taken++) this.seqs.push(Number(events[taken]!.id));
      };
      const poll = setInterval(take, 50);
      await client.ended;
      clearInterval(poll);
      take();
      // As an EventSource would after its retry: 1000, a little sooner.
      if (!this.#stopped) await sleep(200);
    }
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((done) => setTimeout(done, ms));
}
