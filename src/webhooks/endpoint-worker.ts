import { performance } from 'node:perf_hooks';
import { failureText, isDelivered, nextStep, type DeliveryAttempt, type WebhookEndpoint } from '../domain/webhook.js';
import type { Events, LeasedEndpoint, WebhookDeliveries } from '../store/store.js';
import { attemptResult, type SendMessage, type WebhookLog, type WebhookObserver } from './context.js';
import { DeliveryWindow, type WindowItem } from './delivery-window.js';
import { attemptRecord, eventMessage, resetMessage } from './messages.js';
import type { SentAttempt } from './sender.js';
import { signingSecrets, webhookHeaders } from './signing.js';
import type { TurnBudget } from './turn-budget.js';

/** Events read from the log at a time. */
const PAGE = 100;
/**
 * Events read and not yet delivered, at most: while a failing pet's events wait for its retries,
 * the others' go on until this many are held back, then reading waits.
 */
export const WINDOW_MAX = 5000;
/**
 * Progress is recorded (one transaction: the attempts and the endpoint's place) once this long has
 * passed since the last record ended (at once when it has already), and at once after a failure: a
 * crash between two flushes sends again, with the same webhook-id, what was delivered since the
 * last one and what was in flight (at least once).
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
  /** The sends the process may start this turn of the event loop, shared by its workers (none: no bound). */
  turn?: Pick<TurnBudget, 'grant'>;
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
 * Delivers the event log to one endpoint, up to its maxInFlight requests at once: the events of
 * one pet in seq order, one at a time (the next only once the one before was delivered), different
 * pets side by side; a reset, and with maxInFlight 1 every event, goes alone in seq order (the
 * rule: DeliveryWindow, decisions 10.4). A failure is retried after the schedule's wait (domain
 * nextStep), with the same webhook-id, holding back only its own pet; a Retry-After pauses the
 * whole endpoint; a 410, or the schedule used up, disables it. It runs while its dispatcher holds
 * the endpoint's lease; a flush the store refuses (the lease was taken over, or an operator
 * disabled or removed the endpoint) ends it.
 */
export class EndpointWorker {
  readonly id: string;
  /** The claim of the lease it runs under: its flushes are recorded only while that claim holds. */
  readonly claimedAt: Date;
  readonly #context: WorkerContext;
  #endpoint: WebhookEndpoint;
  readonly #window: DeliveryWindow;
  /** The whole endpoint waits until then (ms since the epoch): a Retry-After, or with maxInFlight 1 any retry. */
  #pausedUntil: number;
  #lastFailureAt: Date | null;
  #lastFailure: string | null;
  #pending: DeliveryAttempt[] = [];
  /** When the last record ended, on the monotonic clock: a wall clock stepped back must not hold the next one back. */
  #lastFlush = performance.now();
  /** A failure since the last flush: it is recorded at once. */
  #failedSinceFlush = false;
  /** Set when an attempt disabled the endpoint: why, recorded by the last flush. */
  #disable: string | undefined;
  #stopped = false;
  /** The store refused a flush (the lease taken over, the endpoint disabled, enabled, replayed or removed): nothing more is recorded. */
  #refused = false;
  /** The flush under way, if any. */
  #flushing: Promise<void> | undefined;
  /** Sends under way. */
  readonly #sends = new Set<Promise<void>>();
  /** The log may hold events after the window: the last read was full, or a hint came since it began. */
  #moreToRead = true;
  /** Hints counted, so one that came while the log was being read is not lost. */
  #hints = 0;
  /** The log was pruned past the window: the reset waits until the window is delivered. */
  #resetBehind = false;
  /** Something happened since the loop last looked (a hint, a send's end, an update): its next sleep does not begin. */
  #kicked = false;
  /** Ends the current sleep: `wakeUp` for a hint, a send's end or a stop, `interrupt` for a stop alone. */
  #wakeUp: (() => void) | undefined;
  #interrupt: (() => void) | undefined;
  #running: Promise<void> | undefined;

  constructor(endpoint: LeasedEndpoint, context: WorkerContext) {
    this.id = endpoint.id;
    this.claimedAt = endpoint.leaseClaimedAt;
    this.#context = context;
    this.#endpoint = endpoint;
    this.#window = new DeliveryWindow(endpoint);
    this.#pausedUntil = endpoint.nextAttemptAt?.getTime() ?? 0;
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

  /** Whether it is stopping or stopped: told to, or by itself (it disabled the endpoint, or the store refused it, and said so in the log). */
  get stopping(): boolean {
    return this.#stopped;
  }

  /** The endpoint as the worker sends to it and signs for it now. */
  get endpoint(): WebhookEndpoint {
    return this.#endpoint;
  }

  /** Takes the endpoint's latest url, secrets and maxInFlight, as the lease round read them; its place stays this worker's own. */
  update(endpoint: WebhookEndpoint): void {
    this.#endpoint = endpoint;
    this.#kick();
  }

  /** Events may have been appended: the worker reads the log again when it has room. */
  wake(): void {
    this.#hints++;
    this.#moreToRead = true;
    this.#kick();
  }

  /** Stops after the attempts in flight (whose failures, cut by the stop, are not recorded), recording what it did. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#interrupt?.();
    await this.#running;
  }

  async #loop(): Promise<void> {
    while (!this.#stopped) {
      if (!this.#context.leaseFresh()) {
        await this.#sleep(STORE_RETRY_MS, false);
        continue;
      }
      this.#kicked = false;
      const { hungry, dueAt } = this.#launch();
      if (this.#stopped) break;
      if (this.#flushDue()) this.#flushAside();
      if (hungry && this.#moreToRead && this.#window.size < WINDOW_MAX) {
        if (!(await this.#read())) await this.#sleep(STORE_RETRY_MS, false);
        continue;
      }
      // Idle with attempts unrecorded: they wait for the period's end, when the loop wakes to flush
      // them (below); recording each at once made a trickle of changes cost a commit per delivery.
      let waitMs = dueAt - Date.now();
      // A flush under way wakes the loop when it ends; the next one is due a period after it.
      if (this.#pending.length > 0 && this.#flushing === undefined) waitMs = Math.min(waitMs, this.#lastFlush + FLUSH_EVERY_MS - performance.now());
      await this.#sleep(waitMs === Infinity ? undefined : Math.max(0, waitMs), true);
    }
    // The sends in flight end (a close aborts them) before the worker is over: the one that replaces it never sends beside them.
    await Promise.all(this.#sends);
    await this.#flushing;
    // What they delivered is recorded with the rest, unless the store already refused this worker.
    if (!this.#refused) await this.#flush(this.#disable);
  }

  /** Starts every send the rule allows now; whether a slot is left for more events, and when a wait ends (Infinity: none). */
  #launch(): { hungry: boolean; dueAt: number } {
    const now = Date.now();
    if (this.#pausedUntil > now) return { hungry: false, dueAt: this.#pausedUntil };
    const maxInFlight = this.#endpoint.maxInFlight;
    const slots = maxInFlight - this.#sends.size;
    if (slots <= 0) return { hungry: false, dueAt: Infinity };
    const { items, dueAt } = this.#window.ready(now, slots, maxInFlight === 1);
    // The rest go in a later turn, once the I/O that is ready (the API's requests) has been handled: woken then.
    const granted = this.#context.turn?.grant(items.length, () => this.#kick()) ?? items.length;
    for (let i = 0; i < granted; i++) this.#start(items[i]!);
    // Held back by the turn, not by the receiver: no more events are read for it meanwhile.
    if (granted < items.length) return { hungry: false, dueAt };
    return { hungry: this.#sends.size < maxInFlight, dueAt };
  }

  /**
   * Starts a flush unless one is under way, and goes on delivering meanwhile: a commit's wait (an
   * fsync, a round trip to the database) holds up no send. One flush at a time, each with the place
   * as it was when it began, so they are recorded in order.
   */
  #flushAside(): void {
    this.#flushing ??= this.#flush().then(() => {
      this.#flushing = undefined;
      this.#kick();
    });
  }

  #flushDue(): boolean {
    if (this.#failedSinceFlush || this.#disable !== undefined) return true;
    return this.#pending.length >= FLUSH_AT || (this.#pending.length > 0 && performance.now() - this.#lastFlush >= FLUSH_EVERY_MS);
  }

  /** Reads the events after the window into it; false when the store could not be read. */
  async #read(): Promise<boolean> {
    const hints = this.#hints;
    const limit = Math.min(PAGE, WINDOW_MAX - this.#window.size);
    let page;
    try {
      page = await this.#context.events.readEvents(this.#window.readUpTo, limit);
    } catch (err) {
      this.#context.log.warn({ err, endpointId: this.id }, 'webhook endpoint: could not read the event log; trying again');
      return false;
    }
    if (page.pruned) {
      this.#moreToRead = false;
      // Everything read before the pruned stretch is delivered first; then the reset, alone.
      if (this.#window.size > 0) this.#resetBehind = true;
      else this.#window.addReset(resetMessage(this.id, this.#window.readUpTo, page.head, new Date()));
      return true;
    }
    for (const event of page.items) this.#window.add(eventMessage(event));
    this.#moreToRead = page.items.length === limit || this.#hints !== hints;
    return true;
  }

  #start(item: WindowItem): void {
    item.state = 'sending';
    const send: Promise<void> = this.#attempt(item).finally(() => {
      this.#sends.delete(send);
      this.#kick();
    });
    this.#sends.add(send);
  }

  /** One attempt at one event, and what follows from its outcome. */
  async #attempt(item: WindowItem): Promise<void> {
    const message = item.message;
    const endpoint = this.#endpoint;
    const at = new Date();
    const headers = webhookHeaders(message, signingSecrets(endpoint, at), at);
    const sent = await this.#context.send(endpoint.url, { id: message.id, body: message.body, headers }).catch(
      (err: unknown): SentAttempt => ({ outcome: { error: err instanceof Error ? err.message : String(err) }, durationMs: Date.now() - at.getTime(), responseBody: null }),
    );
    const outcome = sent.outcome;
    // Cut by a shutdown (the sends in flight are aborted): not the receiver's failure; the next holder sends it again.
    if (this.#stopped && !isDelivered(outcome)) {
      item.state = 'waiting';
      return;
    }
    this.#pending.push(attemptRecord(this.id, message, at, sent));
    this.#context.observer?.attempted(this.id, attemptResult(outcome), sent.durationMs);
    const step = nextStep(outcome, item.failures, this.#context.schedule, new Date());
    if (step.kind === 'delivered') {
      if (message.occurredAt) this.#context.observer?.delivered(Date.now() - message.occurredAt.getTime());
      this.#window.delivered(item);
      // After a reset, the log is read again from the head it named.
      if (message.pets === undefined) this.#moreToRead = true;
      if (this.#resetBehind && this.#window.size === 0) {
        this.#resetBehind = false;
        this.#moreToRead = true;
      }
      return;
    }
    item.failures = step.failures;
    item.state = 'waiting';
    this.#lastFailureAt = at;
    this.#lastFailure = failureText(outcome);
    this.#failedSinceFlush = true;
    const fields = { endpointId: this.id, url: endpoint.url, eventId: message.id, failures: step.failures, failure: this.#lastFailure };
    if (step.kind === 'retry') {
      item.retryAt = step.at.getTime();
      // A receiver asking for a pause asks it of the endpoint; with one request at a time, every event waits for the one failing.
      if (('retryAfterMs' in outcome && outcome.retryAfterMs !== undefined) || endpoint.maxInFlight === 1) {
        this.#pausedUntil = Math.max(this.#pausedUntil, item.retryAt);
      }
      this.#context.log.warn({ ...fields, retryAt: step.at.toISOString() }, 'webhook delivery failed; it is tried again later');
    } else {
      this.#context.log.warn({ ...fields, reason: step.why }, 'webhook endpoint disabled');
      this.#disable = step.why;
      this.#stopped = true;
      this.#interrupt?.();
    }
  }

  /**
   * Records the attempts since the last flush and where the endpoint stands, the place only while
   * the lease holds; false (and the worker stops) once the store refuses it (the attempts are
   * logged all the same: they were sent, decisions 10.10). A store that cannot be reached is
   * tried again (the worker sends nothing once its lease may have run out: leaseFresh), unless the
   * worker is stopping (what was not recorded is sent again).
   */
  async #flush(disable?: string): Promise<boolean> {
    if (this.#pending.length === 0 && !this.#failedSinceFlush && disable === undefined) return true;
    // The place and the attempts as they are now, together: sends that end during the write go in the next flush.
    const attempts = this.#pending;
    this.#pending = [];
    this.#failedSinceFlush = false;
    const position = this.#window.position();
    const now = Date.now();
    const progress = {
      attempts,
      ...position,
      failures: position.retrying.reduce((most, r) => Math.max(most, r.failures), 0),
      nextAttemptAt: this.#pausedUntil > now ? new Date(this.#pausedUntil) : null,
      lastFailureAt: this.#lastFailureAt,
      lastFailure: this.#lastFailure,
      ...(disable !== undefined && { disable }),
    };
    for (;;) {
      try {
        const held = await this.#context.deliveries.recordProgress(this.id, this.#context.holder, progress, this.claimedAt);
        this.#lastFlush = performance.now();
        if (!held) {
          this.#refused = true;
          this.#context.log.info({ endpointId: this.id }, 'webhook endpoint: no longer delivered from this instance (disabled, removed, or taken over)');
          this.#stopped = true;
        }
        return held;
      } catch (err) {
        this.#context.log.warn({ err, endpointId: this.id }, 'webhook endpoint: could not record deliveries; trying again');
        if (this.#stopped) return false;
        // Not the loop's sleep: the loop goes on beside a flush.
        await new Promise((resolve) => setTimeout(resolve, STORE_RETRY_MS).unref());
      }
    }
  }

  #kick(): void {
    this.#kicked = true;
    this.#wakeUp?.();
  }

  /** Waits `ms` (undefined: until woken), or until stopped, or (`wakeable`) until a hint, a send's end or an update comes. */
  #sleep(ms: number | undefined, wakeable: boolean): Promise<void> {
    if (this.#stopped || (wakeable && this.#kicked)) return Promise.resolve();
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
