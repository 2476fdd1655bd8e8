import { channel } from 'node:diagnostics_channel';
import { idempotencySlot, type ChangeResult, type QuantityChange } from '../domain/inventory.js';
import type { ReservationWrite, ReservationWriteResult } from '../domain/reservation.js';
import { StoreUnavailableError } from '../errors.js';
import { clock, StoreTimeoutError } from './deadline.js';

/**
 * How a backend commits one batch: one transaction (one fsync) for all of it, resolving to one
 * result per change in the order given, where an Error is a change that failed alone. Rejects
 * when the batch as a whole could not be committed. `deadline` (a `clock()` time; undefined without
 * a timeout) is when the last change of the batch stops waiting: past it, nobody needs the batch.
 */
export type CommitBatch<C, R> = (batch: readonly C[], deadline: number | undefined) => Promise<(R | Error)[]>;

export interface GroupCommitOptions<C> {
  /** Changes that share a key never share a batch: a later one waits for the next, so their order holds. */
  keysOf: (change: C) => readonly unknown[];
  /** Most changes in one batch. */
  maxBatch: number;
  /** Most changes waiting for a batch; beyond, a change is refused at once (503) rather than queueing on a slow store. */
  maxWaiting: number;
  /** The longest a change waits for its answer, from its submit (STORE_TIMEOUT_MS); unset: as long as the store takes. */
  timeoutMs?: number;
  /** false: batch sizes are not published on batchChannel (a serial commit's are always 1, and would skew the changes'). */
  publishSizes?: boolean;
}

/** Publishes the size (a number) of each batch sent to the store, for the metrics; costs nothing while nobody subscribes. */
export const batchChannel = channel('petstore-inventory:group-commit:batch');

/** Most changes of quantity in one batch. */
export const BATCH_MAX = 256;
/** Most changes of quantity waiting: more than any burst a healthy store sees, few enough to answer 503 at once when it stalls. */
export const WAITING_MAX = 4 * BATCH_MAX;

/**
 * The group commit of changes of quantity, with the rules both backends share: changes of one
 * pet, and changes with one idempotency key of one API key, never share a batch (so a retry
 * finds the first one committed, and a pet's changes apply in arrival order).
 */
export function changeGroupCommit(
  commit: CommitBatch<QuantityChange, ChangeResult>,
  options: { timeoutMs?: number } = {},
): GroupCommit<QuantityChange, ChangeResult> {
  return new GroupCommit(commit, {
    keysOf: (change) => [change.petId, change.idempotency && idempotencySlot(change.keyId, change.idempotency.key)],
    maxBatch: BATCH_MAX,
    maxWaiting: WAITING_MAX,
    timeoutMs: options.timeoutMs,
  });
}

/** Most reservation writes in one group: a burst of checkouts shares a commit, and no transaction holds its locks long. */
export const RESERVATION_BATCH_MAX = 64;

/**
 * The group commit of reservation writes (decisions 12.7), both backends': creations and ends in
 * arrival order, each judged on what the ones before it left, so none needs a key apart.
 */
export function reservationGroupCommit(
  commit: CommitBatch<ReservationWrite, ReservationWriteResult>,
  options: { timeoutMs?: number | undefined } = {},
): GroupCommit<ReservationWrite, ReservationWriteResult> {
  return new GroupCommit(commit, { keysOf: () => [], maxBatch: RESERVATION_BATCH_MAX, maxWaiting: WAITING_MAX, timeoutMs: options.timeoutMs, publishSizes: false });
}

/**
 * Writes that each need a transaction of their own (a ChangeBatch), one at a time in arrival
 * order, with the group commit's waiting limit, timeout and close: the same answers under load
 * and at shutdown as a change's.
 */
export function serialCommit<C, R>(commit: (write: C, deadline: number | undefined) => Promise<R>, options: { timeoutMs?: number } = {}): GroupCommit<C, R> {
  return new GroupCommit<C, R>(async ([write], deadline) => [await commit(write!, deadline)], {
    keysOf: () => [],
    maxBatch: 1,
    maxWaiting: WAITING_MAX,
    timeoutMs: options.timeoutMs,
    publishSizes: false,
  });
}

interface Pending<C, R> {
  change: C;
  resolve: (result: R) => void;
  reject: (err: unknown) => void;
  /** The clock() time by which it is answered; Infinity without a timeout. */
  deadline: number;
}

/**
 * The one write path of the stores: changes are committed in groups, one batch in flight at a
 * time. The first change of a batch waits one turn of the event loop for the changes parsed with
 * it; the changes that arrive while a batch commits go together in the next one. Each change is
 * settled only once its own batch has committed. A batch the store refuses as a whole (and not
 * for being unavailable) is retried change by change, so an invalid change fails alone. On close
 * what was accepted is committed, and nothing more is accepted.
 *
 * With `timeoutMs`, each change is answered within that time of its submit, however long the batch
 * before it holds the line: a change still waiting is dropped (it is never committed), one in the
 * batch in flight is refused as unavailable and may still commit (the store decides, not us).
 */
export class GroupCommit<C, R> {
  readonly #commit: CommitBatch<C, R>;
  readonly #options: GroupCommitOptions<C>;
  #queue: Pending<C, R>[] = [];
  #inFlight: Promise<void> | undefined;
  #scheduled = false;
  #closed = false;
  #drained: Promise<void> | undefined;
  /**
   * The batch in flight: with the queue, every change not answered yet, which the sweep answers
   * when late. Why no Set of unanswered changes: one add and one delete per change made V8 rebuild
   * the Set's table every few dozen changes, and each table it left behind, once in the old
   * generation, held the changes it had held (and their requests) through every scavenge until
   * the next full collection: measured, 600 bytes a PATCH promoted, against 60 without the Set.
   */
  #current: readonly Pending<C, R>[] = [];
  /** With a timeout: when the sweep that answers the late changes runs next. */
  #sweepAt: number | undefined;
  #sweepTimer: NodeJS.Timeout | undefined;

  constructor(commit: CommitBatch<C, R>, options: GroupCommitOptions<C>) {
    this.#commit = commit;
    this.#options = options;
  }

  /** Changes waiting for a batch (not counting the one in flight). */
  get waiting(): number {
    return this.#queue.length;
  }

  submit(change: C): Promise<R> {
    if (this.#closed) return Promise.reject(new StoreUnavailableError('the store is closed'));
    if (this.#queue.length >= this.#options.maxWaiting) {
      return Promise.reject(new StoreUnavailableError(`more than ${this.#options.maxWaiting} changes are waiting for the store`));
    }
    return new Promise<R>((resolve, reject) => {
      this.#queue.push(this.#pending(change, resolve, reject));
      if (!this.#inFlight && !this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => {
          this.#scheduled = false;
          this.#next();
        });
      }
    });
  }

  /** Commits everything accepted so far; later submits are refused. */
  close(): Promise<void> {
    this.#closed = true;
    this.#drained ??= this.#drain();
    return this.#drained;
  }

  async #drain(): Promise<void> {
    while (this.#inFlight || this.#queue.length > 0) {
      this.#next();
      await this.#inFlight;
    }
  }

  #next(): void {
    if (this.#sweepAt !== undefined && this.#sweepAt <= clock()) this.#sweep();
    if (this.#inFlight || this.#queue.length === 0) return;
    const batch = this.#take();
    if (this.#options.publishSizes !== false && batchChannel.hasSubscribers) batchChannel.publish(batch.length);
    this.#current = batch;
    this.#inFlight = this.#run(batch)
      .then(() => undefined)
      .finally(() => {
        this.#inFlight = undefined;
        this.#current = [];
        this.#next();
        // Every change answered: nothing is left to answer late, nor to keep the process up.
        if (!this.#inFlight) this.#disarmSweep();
      });
  }

  /** The oldest changes, up to maxBatch, skipping any that shares a key with an earlier change; the rest stay queued in order. */
  #take(): Pending<C, R>[] {
    const taken = new Set<unknown>();
    const batch: Pending<C, R>[] = [];
    const rest: Pending<C, R>[] = [];
    for (const pending of this.#queue) {
      // Loops, not filter and some: this runs for every change.
      const keys = this.#options.keysOf(pending.change);
      let clashes = false;
      for (const k of keys) if (k !== undefined && taken.has(k)) clashes = true;
      if (batch.length < this.#options.maxBatch && !clashes) batch.push(pending);
      else rest.push(pending);
      // A change left for later holds its keys too: no later change that shares one may pass it.
      for (const k of keys) if (k !== undefined) taken.add(k);
    }
    this.#queue = rest;
    return batch;
  }

  /** Commits a batch and settles its changes; resolves to the outage when the store was unavailable. */
  async #run(batch: readonly Pending<C, R>[]): Promise<StoreUnavailableError | undefined> {
    let results: (R | Error)[];
    try {
      results = await this.#commit(
        batch.map((p) => p.change),
        this.#options.timeoutMs === undefined ? undefined : Math.max(...batch.map((p) => p.deadline)),
      );
    } catch (err) {
      if (batch.length === 1 || err instanceof StoreUnavailableError) {
        for (const p of batch) p.reject(err);
        return err instanceof StoreUnavailableError ? err : undefined;
      }
      // Nothing of a refused batch was written: each change alone tells which one the store refuses.
      for (const [i, p] of batch.entries()) {
        const outage = await this.#run([p]);
        if (outage) {
          // The store went away meanwhile: the rest would only wait for it too.
          for (const rest of batch.slice(i + 1)) rest.reject(outage);
          return outage;
        }
      }
      return undefined;
    }
    batch.forEach((p, i) => {
      const result = results[i]!;
      if (result instanceof Error) p.reject(result);
      else p.resolve(result);
    });
    return undefined;
  }

  /** A change as queued; with a timeout, the sweep is armed for its deadline (the queue and the batch in flight are what it sweeps). */
  #pending(change: C, resolve: (result: R) => void, reject: (err: unknown) => void): Pending<C, R> {
    const timeoutMs = this.#options.timeoutMs;
    if (timeoutMs === undefined) return { change, resolve, reject, deadline: Infinity };
    const pending: Pending<C, R> = { change, resolve, reject, deadline: clock() + timeoutMs };
    this.#armSweep(pending.deadline);
    return pending;
  }

  #disarmSweep(): void {
    clearTimeout(this.#sweepTimer);
    this.#sweepAt = undefined;
  }

  /** One timer for all changes, set for the earliest deadline: under load, one sweep per timeout rather than a timer per change. */
  #armSweep(at: number): void {
    if (this.#sweepAt !== undefined && this.#sweepAt <= at) return;
    clearTimeout(this.#sweepTimer);
    this.#sweepAt = at;
    this.#sweepTimer = setTimeout(() => this.#sweep(), Math.max(0, at - clock()));
  }

  /**
   * Answers every change past its deadline as unavailable; those still queued leave the queue and
   * are never committed. One in the batch in flight is answered here, and leaves the sweep's view of
   * that batch so that it is answered once; its batch's own answer later comes to nothing (a promise
   * settles once).
   */
  #sweep(): void {
    this.#disarmSweep();
    const now = clock();
    let nextAt = Infinity;
    const late = (pending: Pending<C, R>): boolean => {
      if (pending.deadline > now) {
        nextAt = Math.min(nextAt, pending.deadline);
        return false;
      }
      pending.reject(new StoreTimeoutError('the change', this.#options.timeoutMs!));
      return true;
    };
    this.#current = this.#current.filter((pending) => !late(pending));
    this.#queue = this.#queue.filter((pending) => !late(pending));
    if (nextAt !== Infinity) this.#armSweep(nextAt);
  }
}
