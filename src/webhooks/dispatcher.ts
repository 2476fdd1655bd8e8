import { randomBytes } from 'node:crypto';
import type { Events, LeasedEndpoint, WebhookDeliveries } from '../store/store.js';
import type { SendMessage, WebhookLog, WebhookObserver } from './context.js';
import { EndpointWorker, type WorkerContext } from './endpoint-worker.js';
import { SENDS_PER_SECOND_WHEN_BUSY, SENDS_PER_TURN, TurnBudget } from './turn-budget.js';

/**
 * How often a dispatcher reads the log's head to wake its idle endpoints, and the endpoints version
 * to reload its endpoints, when no hint comes sooner (a change made by another process).
 */
export const WEBHOOK_POLL_MS = 250;

export interface DispatcherOptions {
  /** The leases on endpoints, and the progress each worker records under its own. */
  deliveries: WebhookDeliveries;
  events: Pick<Events, 'readEvents' | 'head' | 'onAppended'>;
  send: SendMessage;
  /** The waits before each retry (WEBHOOK_RETRY_SCHEDULE). */
  schedule: readonly number[];
  /** How long a lease lasts unrenewed (WEBHOOK_LEASE_MS); it is renewed every third of it. */
  leaseMs: number;
  log: WebhookLog;
  observer?: WebhookObserver;
  pollMs?: number;
  /** Aborts every send in flight (WebhookSender.close), so a shutdown need not wait out a receiver's timeout. */
  cancelSends?: () => void;
  /** Whether the process is answering API requests now: deliveries then start at most SENDS_PER_SECOND_WHEN_BUSY (decisions 10.14). */
  busy?: () => boolean;
}

/**
 * One instance's deliveries: every third of a lease it renews the endpoints it holds and claims
 * free ones (WebhookDeliveries.leaseEndpoints), runs one EndpointWorker per endpoint it holds, and stops
 * the worker of one it no longer holds (disabled, removed, or taken over after this instance
 * stalled past its lease). Endpoints never wait for one another: each has its own worker.
 * Workers sleep while their endpoint has nothing to deliver, and are woken when the store hints
 * that events were appended, or when a poll of the head finds it moved (another process's write).
 * An operator's change (an endpoint added, removed, disabled, enabled, replayed, its secret
 * rotated, from any process) moves the store's endpoints version: when a poll (or the store's hint)
 * finds it moved, a lease round runs at once, so the change takes effect within a poll, not a round.
 */
export class WebhookDispatcher {
  /** This instance's name on the leases: random, so a restarted process is a new holder. */
  readonly holder = `whd_${randomBytes(9).toString('base64url')}`;
  readonly #options: DispatcherOptions;
  readonly #workers = new Map<string, EndpointWorker>();
  /**
   * Workers told to stop and not yet stopped, by endpoint: a new worker for the endpoint starts only
   * once its predecessor stopped, whichever round stopped it, and close() waits for them too.
   */
  readonly #stopping = new Map<string, Promise<void>>();
  /** When each endpoint's worker last ended by itself (disabled, or refused by the store), on performance.now(). */
  readonly #ended = new Map<string, number>();
  readonly #context: WorkerContext;
  /** When the last lease round that succeeded began, on performance.now(): the leases it renewed run until at least leaseMs after it. */
  #renewedAt = -Infinity;
  #leaseTimer: NodeJS.Timeout | undefined;
  #pollTimer: NodeJS.Timeout | undefined;
  #stopHint: (() => void) | undefined;
  #stopEndpointsHint: (() => void) | undefined;
  /** The endpoints version as last read; undefined before the first read. */
  #endpointsVersion: number | undefined;
  /** A read of the version under way, and whether a hint came meanwhile (then it reads again). */
  #checking = false;
  #checkAgain = false;
  #leasing: Promise<void> | undefined;
  #head = -1;
  #closed = false;

  constructor(options: DispatcherOptions) {
    this.#options = options;
    this.#context = {
      holder: this.holder,
      deliveries: options.deliveries,
      events: options.events,
      send: options.send,
      schedule: options.schedule,
      log: options.log,
      ...(options.observer && { observer: options.observer }),
      turn: new TurnBudget(SENDS_PER_TURN, { ...(options.busy && { busy: options.busy }), perSecondWhenBusy: SENDS_PER_SECOND_WHEN_BUSY }),
      // Renewed every third of a lease: two rounds missed in a row, and the lease may soon run out.
      leaseFresh: () => performance.now() - this.#renewedAt < (2 * options.leaseMs) / 3,
      stopped: (worker) => {
        this.#ended.set(worker.id, performance.now());
        if (this.#workers.get(worker.id) === worker) this.#workers.delete(worker.id);
      },
    };
  }

  /** Starts leasing and delivering; the first claim is at once. */
  start(): void {
    if (this.#closed || this.#leaseTimer) return;
    try {
      this.#stopHint = this.#options.events.onAppended(() => this.#wakeAll());
      this.#stopEndpointsHint = this.#options.deliveries.onEndpointsChanged(() => void this.#checkEndpoints());
    } catch {
      // A closed store: the lease round below fails and says so.
    }
    this.#leaseTimer = setInterval(() => void this.#leaseRound(), Math.max(100, Math.floor(this.#options.leaseMs / 3)));
    this.#leaseTimer.unref();
    this.#pollTimer = setInterval(() => void this.#poll(), this.#options.pollMs ?? WEBHOOK_POLL_MS);
    this.#pollTimer.unref();
    void this.#checkEndpoints();
    void this.#leaseRound();
  }

  /** The endpoints this instance delivers to now, by id. */
  get endpoints(): string[] {
    return [...this.#workers.keys()];
  }

  /** A lease round that begins after this call (one under way is let finish first), as the timer does it; resolves when it is over (tests). */
  async leaseNow(): Promise<void> {
    await this.#leasing;
    await this.#leaseRound();
  }

  /**
   * Stops every worker (the sends in flight are aborted: the next holder sends them again, with
   * the same webhook-id), records what they delivered, then gives the leases up so another
   * instance takes the endpoints over at once.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#leaseTimer);
    clearInterval(this.#pollTimer);
    this.#stopHint?.();
    this.#stopEndpointsHint?.();
    await this.#leasing;
    const stopped = [...this.#workers.values()].map((w) => w.stop());
    this.#options.cancelSends?.();
    await Promise.all([...stopped, ...this.#stopping.values()]);
    this.#workers.clear();
    await this.#options.deliveries.releaseLeases(this.holder).catch((err: unknown) => this.#options.log.warn({ err }, 'could not release the webhook leases; they expire by themselves'));
  }

  #leaseRound(): Promise<void> {
    // Rounds never overlap: a slow store delays the next, it does not stack them.
    this.#leasing ??= this.#lease().finally(() => (this.#leasing = undefined));
    return this.#leasing;
  }

  async #lease(): Promise<void> {
    if (this.#closed) return;
    const began = performance.now();
    let held: LeasedEndpoint[];
    try {
      held = await this.#options.deliveries.leaseEndpoints(this.holder, this.#options.leaseMs);
      this.#renewedAt = began;
    } catch (err) {
      // The workers go on: a flush records progress only while the lease holds, so nothing is recorded twice.
      if (!this.#closed) this.#options.log.warn({ err }, 'could not renew the webhook leases; trying again');
      return;
    }
    if (this.#closed) return;
    const claims = new Map(held.map((e) => [e.id, e.leaseClaimedAt.getTime()]));
    for (const [id, worker] of this.#workers) {
      // Gone from the set (disabled, removed, taken over), or claimed anew after an operator's
      // enable or replay: the worker's place is stale, a new one starts from the store's.
      if (claims.get(id) !== worker.claimedAt.getTime()) {
        this.#workers.delete(id);
        // A worker that disabled the endpoint itself (or was refused by the store) logged that change already; it may still
        // be recording it when this round's read comes back.
        const saidSo = worker.stopping;
        const stop: Promise<void> = worker.stop().finally(() => {
          if (this.#stopping.get(id) === stop) this.#stopping.delete(id);
        });
        this.#stopping.set(id, stop);
        if (claims.has(id)) this.#options.log.info({ endpointId: id, holder: this.holder }, 'webhook endpoint: delivery starts again from its recorded place (enabled or replayed)');
        else if (!saidSo) this.#options.log.info({ endpointId: id, holder: this.holder }, 'webhook endpoint: no longer delivered from this instance (disabled, removed, or taken over)');
      }
    }
    for (const endpoint of held) {
      const running = this.#workers.get(endpoint.id);
      if (running) {
        if (running.endpoint.secret !== endpoint.secret) this.#options.log.info({ endpointId: endpoint.id, holder: this.holder }, 'webhook endpoint: its secret was rotated; deliveries carry both signatures');
        running.update(endpoint);
        continue;
      }
      // Its worker ended by itself while this round's read was on its way (a 410 disabled it): the read is stale.
      if ((this.#ended.get(endpoint.id) ?? -Infinity) > began) continue;
      const worker = new EndpointWorker(endpoint, this.#context);
      this.#workers.set(endpoint.id, worker);
      this.#options.log.info({ endpointId: endpoint.id, holder: this.holder, deliveredSeq: endpoint.deliveredSeq }, 'webhook endpoint: delivering from this instance');
      // One delivery in flight per endpoint, always: a new worker waits for the one it replaces.
      const before = this.#stopping.get(endpoint.id);
      if (before) void before.then(() => worker.run());
      else worker.run();
    }
  }

  /**
   * Reads the endpoints version; when it moved since the last read, runs a lease round that begins
   * after the read, which picks up whatever moved it (a new, enabled or replayed endpoint claimed; a
   * removed or disabled one's worker stopped; a rotated secret given to the worker).
   */
  async #checkEndpoints(): Promise<void> {
    if (this.#checking) {
      this.#checkAgain = true;
      return;
    }
    this.#checking = true;
    try {
      do {
        this.#checkAgain = false;
        const version = await this.#options.deliveries.endpointsVersion();
        if (this.#closed) return;
        if (version === this.#endpointsVersion) continue;
        this.#endpointsVersion = version;
        await this.leaseNow();
      } while (this.#checkAgain && !this.#closed);
    } catch {
      // The next poll reads it again; the lease rounds say what is wrong with the store.
    } finally {
      this.#checking = false;
    }
  }

  async #poll(): Promise<void> {
    if (this.#closed) return;
    void this.#checkEndpoints();
    if (this.#workers.size === 0) return;
    try {
      const head = await this.#options.events.head();
      if (head !== this.#head) {
        this.#head = head;
        this.#wakeAll();
      }
    } catch {
      // The next poll tries again; the workers' own reads say what is wrong.
    }
  }

  #wakeAll(): void {
    for (const worker of this.#workers.values()) worker.wake();
  }
}
