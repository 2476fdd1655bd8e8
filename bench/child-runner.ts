import { spawnChild, stopChild, TSX_NODE, type Spawned } from './processes.js';

/** What a runner child answers to the job with this id: its result, or why it failed. */
export type RunnerReply<R> = { id: number; result: R } | { id: number; error: string };
/** Sent to a runner child to end the job with this id early (a child whose jobs can be stopped acts on it). */
export interface StopJob {
  stop: number;
}

/**
 * A long-lived bench/*.ts child process (on the load core when pinned) that takes jobs over IPC,
 * each `{ id, ...job }`, and answers each with a RunnerReply: the load generators and the tills'
 * clients run here, never in the harness, so they neither take the server's core nor share theirs.
 */
export class ChildRunner<J, R> {
  readonly #name: string;
  readonly #process: Spawned;
  readonly #pending = new Map<number, { done: (r: R) => void; fail: (e: Error) => void }>();
  #nextId = 0;

  /** `name` starts its errors' messages (e.g. "load generator"). */
  constructor(entry: string, name: string, pinned: boolean) {
    this.#name = name;
    this.#process = spawnChild([...TSX_NODE, entry], {
      ...(pinned ? { core: 'load' as const } : {}),
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    this.#process.child.on('message', (reply: RunnerReply<R>) => {
      const job = this.#pending.get(reply.id);
      this.#pending.delete(reply.id);
      if ('error' in reply) job?.fail(new Error(`${this.#name}: ${reply.error}`));
      else job?.done(reply.result);
    });
    void this.#process.exited.then((how) => {
      for (const job of this.#pending.values()) job.fail(new Error(`${this.#name} exited (${how}):\n${this.#process.output()}`));
      this.#pending.clear();
    });
  }

  /** Runs `job`; `stop` aborted asks the child to end it early (StopJob), and the answer is what it did until then. */
  run(job: J, stop?: AbortSignal): Promise<R> {
    return new Promise((done, fail) => {
      const id = this.#nextId++;
      this.#pending.set(id, { done, fail });
      this.#process.child.send({ ...job, id });
      stop?.addEventListener('abort', () => {
        if (this.#pending.has(id) && this.#process.child.connected) this.#process.child.send({ stop: id } satisfies StopJob);
      }, { once: true });
    });
  }

  async close(): Promise<void> {
    if (this.#process.child.connected) this.#process.child.disconnect();
    await stopChild(this.#process, 2000);
  }
}
