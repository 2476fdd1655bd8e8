import { failureText, isDelivered, nextStep, type DeliveryAttempt, type WebhookEndpoint } from '../domain/webhook.js';
import type { Events, LeasedEndpoint, WebhookDeliveries } from '../store/store.js';
import { attemptResult, type SendMessage, type WebhookLog, type WebhookObserver } from './context.js';
import { attemptRecord, eventMessage, resetMessage, type WebhookMessage } from './messages.js';
import type { SentAttempt } from './sender.js';
import { signingSecrets, webhookHeaders } from './signing.js';

/** Events read from the log at a time. */
const PAGE = 100;
/**
 * Progress is recorded (one transaction: the attempts and the endpoint's place) this often while
 * deliveries succeed, at most, and at once after a failure: a crash between two flushes sends
 * again, with the same webhook-id, what was delivered since the last one (at least once).
 */
export const FLUSH_EVERY_MS = 100;
/** ... or after this many attempts, whichever comes first. */
const FLUSH_AT = 500;
/** A store that cannot be read or written is tried again after this. */
const STORE_RETRY_MS = 1000;

/** What a worker needs of its dispatcher. */
export interface WorkerContext {
  holder: string;
  deliveries: Pick<WebhookDeliveries, 'recordProgress'>;
  events: Pick<Events, 'readEvents'>;
  send: SendMessage;
  schedule: readonly number[];
  log: WebhookLog;
  observer?: WebhookObserver;
  /**
   * Whether the dispatcher renewed its leases recently enough that they cannot have run out: while
   * it is not (the store unreachable past a lease's third), the worker sends nothing, so another
   * instance that takes the endpoint over never sends beside it.
   */
  leaseFresh(): boolean;
  /** Told when the worker ended by itself (disabled, or the lease lost), so the dispatcher forgets it. */
  stopped(worker: EndpointWorker): void;
}

/**
 * Delivers the event log to one endpoint, in seq order, one event at a time: the next is sent only
 * once the one before was delivered. A failure is retried after the schedule's wait (domain
 * nextStep), with the same webhook-id; a 410, or the schedule used up, disables the endpoint. It
 * runs while its dispatcher holds the endpoint's lease; a flush the store refuses (the lease was
 * taken over, or an operator disabled or removed the endpoint) ends it.
 */
export class EndpointWorker {
  readonly id: string;
  /** The claim of the lease it runs under: its flushes are recorded only while that claim holds. */
  readonly claimedAt: Date;
  readonly #context: WorkerContext;
  #endpoint: WebhookEndpoint;
  #deliveredSeq: number;
  #failures: number;
  #nextAttemptAt: Date | null;
  #lastFailureAt: Date | null;
  #lastFailure: string | null;
  #pending: DeliveryAttempt[] = [];
  #lastFlush = Date.now();
  #stopped = false;
  /** Events may have been appended since the worker last read the log: a hint that came while it was busy is kept here. */
  #woken = false;
  /** The reset the endpoint is being sent (after, head), kept so that every retry of it carries the same webhook-id. */
  #reset: { after: number; head: number } | undefined;
  /** Ends the current sleep: `wakeUp` for a hint or a stop, `interrupt` for a stop alone. */
  #wakeUp: (() => void) | undefined;
  #interrupt: (() => void) | undefined;
  #running: Promise<void> | undefined;

  constructor(endpoint: LeasedEndpoint, context: WorkerContext) {
    this.id = endpoint.id;
    this.claimedAt = endpoint.leaseClaimedAt;
    this.#context = context;
    this.#endpoint = endpoint;
    this.#deliveredSeq = endpoint.deliveredSeq;
    this.#failures = endpoint.failures;
    this.#nextAttemptAt = endpoint.nextAttemptAt;
    this.#lastFailureAt = endpoint.lastFailureAt;
    this.#lastFailure = endpoint.lastFailure;
  }

  /** Starts delivering. */
  run(): void {
    this.#running ??= this.#loop()
      .catch((err: unknown) => this.#context.log.warn({ err, endpointId: this.id }, 'webhook endpoint: delivery stopped by an error; the next lease round starts it again'))
      .finally(() => {
        this.#stopped = true;
        this.#context.stopped(this);
      });
  }

  /** The endpoint as the worker sends to it and signs for it now. */
  get endpoint(): WebhookEndpoint {
    return this.#endpoint;
  }

  /** Takes the endpoint's latest url and secrets (a rotation), as the lease round read them; its place stays this worker's own. */
  update(endpoint: WebhookEndpoint): void {
    this.#endpoint = endpoint;
  }

  /** Events may have been appended: an idle worker reads the log again, a busy one once it is done. */
  wake(): void {
    this.#woken = true;
    this.#wakeUp?.();
  }

  /** Stops after the attempt in flight (whose failure, cut by the stop, is not recorded), recording what it did. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#interrupt?.();
    await this.#running;
  }

  async #loop(): Promise<void> {
    while (!this.#stopped) {
      const waitMs = this.#nextAttemptAt === null ? 0 : this.#nextAttemptAt.getTime() - Date.now();
      if (waitMs > 0) {
        if (!(await this.#flush())) return;
        await this.#sleep(waitMs, false);
        continue;
      }
      if (!this.#context.leaseFresh()) {
        await this.#sleep(STORE_RETRY_MS, false);
        continue;
      }
      this.#woken = false;
      let page;
      try {
        page = await this.#context.events.readEvents(this.#deliveredSeq, PAGE);
      } catch (err) {
        this.#context.log.warn({ err, endpointId: this.id }, 'webhook endpoint: could not read the event log; trying again');
        await this.#sleep(STORE_RETRY_MS, false);
        continue;
      }
      if (page.pruned) {
        if (this.#reset?.after !== this.#deliveredSeq) this.#reset = { after: this.#deliveredSeq, head: page.head };
        if (await this.#deliver(resetMessage(this.id, this.#reset.after, this.#reset.head, new Date()))) this.#reset = undefined;
      } else if (page.items.length === 0) {
        if (!(await this.#flush())) return;
        // A hint that came while the log was being read (or the flush written) is not lost.
        if (!this.#woken) await this.#sleep(undefined, true);
      } else {
        for (const event of page.items) {
          if (this.#stopped || !(await this.#deliver(eventMessage(event)))) break;
        }
      }
    }
    await this.#flush();
  }

  /** One attempt; true when it was delivered and the worker goes on to the next event. */
  async #deliver(message: WebhookMessage): Promise<boolean> {
    const endpoint = this.#endpoint;
    const at = new Date();
    const headers = webhookHeaders(message, signingSecrets(endpoint, at), at);
    const sent = await this.#context.send(endpoint.url, { id: message.id, body: message.body, headers }).catch(
      (err: unknown): SentAttempt => ({ outcome: { error: err instanceof Error ? err.message : String(err) }, durationMs: Date.now() - at.getTime(), responseBody: null }),
    );
    const outcome = sent.outcome;
    // Cut by a shutdown (the sends in flight are aborted): not the receiver's failure; the next holder sends it again.
    if (this.#stopped && !isDelivered(outcome)) return false;
    this.#pending.push(attemptRecord(this.id, message, at, sent));
    this.#context.observer?.attempted(this.id, attemptResult(outcome), sent.durationMs);
    const step = nextStep(outcome, this.#failures, this.#context.schedule, new Date());
    if (step.kind === 'delivered') {
      if (message.occurredAt) this.#context.observer?.delivered(Date.now() - message.occurredAt.getTime());
      this.#deliveredSeq = message.seq;
      this.#failures = 0;
      this.#nextAttemptAt = null;
      if (this.#pending.length >= FLUSH_AT || Date.now() - this.#lastFlush >= FLUSH_EVERY_MS) return this.#flush();
      return true;
    }
    this.#failures = step.failures;
    this.#lastFailureAt = at;
    this.#lastFailure = failureText(outcome);
    const fields = { endpointId: this.id, url: endpoint.url, eventId: message.id, failures: step.failures, failure: this.#lastFailure };
    if (step.kind === 'retry') {
      this.#nextAttemptAt = step.at;
      this.#context.log.warn({ ...fields, retryAt: step.at.toISOString() }, 'webhook delivery failed; it is tried again later');
      await this.#flush();
    } else {
      this.#nextAttemptAt = null;
      this.#context.log.warn({ ...fields, reason: step.why }, 'webhook endpoint disabled');
      await this.#flush(step.why);
      this.#stopped = true;
    }
    return false;
  }

  /**
   * Records the attempts since the last flush and where the endpoint stands, while the lease
   * holds; false (and the worker stops) once the store refuses. A store that cannot be reached is
   * tried again, deliveries waiting, unless the worker is stopping (what was not recorded is sent again).
   */
  async #flush(disable?: string): Promise<boolean> {
    if (this.#pending.length === 0 && disable === undefined) return true;
    const progress = {
      attempts: this.#pending,
      deliveredSeq: this.#deliveredSeq,
      failures: this.#failures,
      nextAttemptAt: this.#nextAttemptAt,
      lastFailureAt: this.#lastFailureAt,
      lastFailure: this.#lastFailure,
      ...(disable !== undefined && { disable }),
    };
    for (;;) {
      try {
        const held = await this.#context.deliveries.recordProgress(this.id, this.#context.holder, progress, this.claimedAt);
        this.#pending = [];
        this.#lastFlush = Date.now();
        if (!held) {
          this.#context.log.info({ endpointId: this.id }, 'webhook endpoint: no longer delivered from this instance (disabled, removed, or taken over)');
          this.#stopped = true;
        }
        return held;
      } catch (err) {
        this.#context.log.warn({ err, endpointId: this.id }, 'webhook endpoint: could not record deliveries; trying again');
        if (this.#stopped) return false;
        await this.#sleep(STORE_RETRY_MS, false);
      }
    }
  }

  /** Waits `ms` (undefined: until woken), or until stopped, or (`wakeable`) until a hint comes. */
  #sleep(ms: number | undefined, wakeable: boolean): Promise<void> {
    if (this.#stopped) return Promise.resolve();
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const done = () => {
        clearTimeout(timer);
        this.#wakeUp = undefined;
        this.#interrupt = undefined;
        resolve();
      };
      if (ms !== undefined) timer = setTimeout(done, ms).unref();
      this.#interrupt = done;
      this.#wakeUp = wakeable ? done : undefined;
    });
  }
}
