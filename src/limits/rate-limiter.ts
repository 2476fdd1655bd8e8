import type { Allowance, SharedAllowances } from './allowance.js';

/** The draft's policy name: one policy, so one name. */
export const POLICY_NAME = 'default';
export const WINDOW_MS = 60_000;
/** Past this many keys with a live window, expired windows are dropped before another is added. */
const MAX_TRACKED = 100_000;
/** An allowance unused this long goes back to the window, for the other processes to take (decisions 7.10). */
export const IDLE_RETURN_MS = 1000;
/** A window Redis said was spent is refused from memory this long, then Redis is asked again (another process may have given some back). */
export const SPENT_RECHECK_MS = 250;
/** The most a process asks for ahead of the requests waiting on it. */
const MAX_AHEAD = 1000;

/** A request waiting for the shared store to grant it, `count` requests all or none. */
interface Waiter {
  readonly count: number;
  readonly resolve: (decision: RateDecision) => void;
}

/** One key's window as this process knows it. */
interface KeyWindow {
  readonly keyId: string;
  /** Where this key's windows begin within the minute: spread per key, so not every client's quota resets at once. */
  readonly offsetMs: number;
  /** Which window the counts are of: whole windows since the epoch (plus the offset), the same number on every instance. */
  window: number;
  /** When the window ends, in ms since the epoch. */
  resetAt: number;
  /** The window's total in Redis as last answered, this process's unused allowance included (0 without Redis). */
  taken: number;
  /** Granted to this process and not used yet (already in `taken`). */
  allowance: number;
  /** Admitted here without Redis (it was away, or there is none), not yet added to its total. */
  owed: number;
  readonly waiters: Waiter[];
  /** A step is on its way to Redis: one at a time per key, the requests arriving meanwhile wait for its answer. */
  asking: boolean;
  /** Admitted here since the last step was sent, and in the period before it: the demand one round has to cover. */
  sinceAsk: number;
  perRound: number;
  lastUseAt: number;
  /** When Redis last said the window had nothing left; 0 when it did not. */
  spentAt: number;
}

/** A rate decision: one object for the decisions made from memory, overwritten by each and read at once (no allocation per request). */
export interface RateDecision {
  admitted: boolean;
  /** Requests the key has left in its window after this one, as far as this process knows (never more than it has). */
  remaining: number;
  /** Whole seconds until the window resets (1 to 60): `t` of the RateLimit header, and Retry-After of a refusal. */
  resetSeconds: number;
}

/**
 * Requests per API key in fixed one-minute windows. Alone, a process counts in memory. With
 * SharedAllowances (Redis), a request is admitted only with a grant from the window's shared
 * total: each process takes allowances in one atomic step, fewer as the window fills (one at a
 * time near the limit), uses them from memory, and gives back what it has not used after
 * IDLE_RETURN_MS. So the requests admitted across every instance and worker never exceed the
 * limit. A request that finds no allowance here waits for one step to Redis, batched with the
 * others of its key. While Redis is away or failing, each process decides alone on what it knows
 * (fail open) and adds what it admitted to the total once Redis answers again (decisions 7.10).
 */
export class RateLimiter {
  readonly limit: number;
  /** The RateLimit-Policy header, the same on every answer. */
  readonly policyHeader: string;
  readonly decision: RateDecision = { admitted: true, remaining: 0, resetSeconds: 0 };
  readonly #windows = new Map<string, KeyWindow>();
  readonly #shared: SharedAllowances | undefined;
  readonly #clock: () => number;
  /** A step to Redis failed: decide alone until one succeeds (the sweep tries). */
  #away = false;
  #closed = false;
  readonly #timer: NodeJS.Timeout | undefined;

  constructor(limitPerMinute: number, shared?: SharedAllowances, clock: () => number = Date.now) {
    this.limit = limitPerMinute;
    this.policyHeader = `"${POLICY_NAME}";q=${limitPerMinute};w=${WINDOW_MS / 1000}`;
    this.#shared = shared;
    this.#clock = clock;
    if (shared) this.#timer = setInterval(() => this.sweep(), IDLE_RETURN_MS / 4).unref();
  }

  /**
   * Takes `count` requests of `keyId` (a batch's changes beyond its first: decisions 5.12), all or
   * none, if memory can decide: the verdict, in `decision`; undefined (and nothing taken) when
   * only the shared store can tell, which `take` waits for.
   */
  takeNow(keyId: string, count = 1): RateDecision | undefined {
    const now = this.#clock();
    const w = this.#windowOf(keyId, now);
    const d = this.decision;
    if (w.waiters.length === 0 && count <= w.allowance) return this.#admit(w, count, now, d);
    if (this.#alone()) return this.#decideAlone(w, count, now, d);
    if (w.spentAt > 0 && now - w.spentAt < SPENT_RECHECK_MS && count > this.#left(w)) return this.#refuse(w, now, d);
    return undefined;
  }

  /** Takes `count` requests of `keyId`, all or none, waiting for the shared store where memory cannot decide. */
  take(keyId: string, count = 1): Promise<RateDecision> {
    const now = this.takeNow(keyId, count);
    if (now) return Promise.resolve({ ...now });
    const w = this.#windows.get(keyId)!;
    return new Promise((resolve) => {
      w.waiters.push({ count, resolve });
      this.#pump(w);
    });
  }

  /** The RateLimit header of a decision: remaining requests and seconds to the reset. */
  rateLimitHeader(d: RateDecision): string {
    return `"${POLICY_NAME}";r=${d.remaining};t=${d.resetSeconds}`;
  }

  /**
   * Gives back the allowances unused for IDLE_RETURN_MS, forgets the windows that are over (their
   * totals expire in Redis), and sends what was admitted while Redis was away once it is back.
   */
  sweep(): void {
    const shared = this.#shared;
    if (!shared) return;
    const now = this.#clock();
    let owing: KeyWindow | undefined;
    for (const w of this.#windows.values()) {
      if (w.waiters.length > 0 || w.asking) continue;
      if (now >= w.resetAt) {
        this.#windows.delete(w.keyId);
        continue;
      }
      if (w.owed > 0) owing ??= w;
      if (this.#alone() || w.allowance === 0 || now - w.lastUseAt < IDLE_RETURN_MS) continue;
      const count = w.allowance;
      w.allowance = 0;
      w.taken -= count;
      // A give-back that fails leaves them counted there: the window errs toward refusing, never beyond.
      shared.giveBack(w.keyId, w.window, count).catch(() => undefined);
    }
    if (!shared.ready()) return;
    // While away, one step tries Redis again; once it answers, every window sends what it owes.
    if (this.#away) {
      if (owing) this.#ask(owing);
      else this.#away = false;
      return;
    }
    for (const w of this.#windows.values()) if (w.owed > 0 && !w.asking && now < w.resetAt) this.#ask(w);
  }

  async close(): Promise<void> {
    clearInterval(this.#timer);
    this.#closed = true;
    for (const w of this.#windows.values()) this.#pump(w);
    await this.#shared?.close();
  }

  /** Without Redis, or while it is not answering: every decision is this process's own. */
  #alone(): boolean {
    return this.#shared === undefined || this.#away || this.#closed || !this.#shared.ready();
  }

  /** What the key has left as this process knows it: the limit less every grant and every count not yet sent, plus its own unused allowance. */
  #left(w: KeyWindow): number {
    return this.limit - w.taken - w.owed + w.allowance;
  }

  #admit(w: KeyWindow, count: number, now: number, d: RateDecision): RateDecision {
    const granted = Math.min(w.allowance, count);
    w.allowance -= granted;
    w.owed += count - granted;
    w.sinceAsk += count;
    w.lastUseAt = now;
    d.admitted = true;
    d.remaining = Math.max(0, this.#left(w));
    d.resetSeconds = Math.ceil((w.resetAt - now) / 1000);
    // Ahead of demand: the next requests find an allowance here rather than wait for Redis.
    if (!w.asking && w.perRound > 0 && w.allowance <= w.perRound && !this.#alone()) this.#ask(w);
    return d;
  }

  /** Refused, the count is what is left as it was: a batch too large for it may still fit smaller. */
  #refuse(w: KeyWindow, now: number, d: RateDecision): RateDecision {
    d.admitted = false;
    d.remaining = Math.max(0, this.#left(w));
    d.resetSeconds = Math.ceil((w.resetAt - now) / 1000);
    return d;
  }

  #decideAlone(w: KeyWindow, count: number, now: number, d: RateDecision): RateDecision {
    return count <= this.#left(w) ? this.#admit(w, count, now, d) : this.#refuse(w, now, d);
  }

  /** Answers the waiters that the allowance covers, then the rest alone or by asking Redis for more. */
  #pump(w: KeyWindow): void {
    const now = this.#clock();
    if (now >= w.resetAt) this.#roll(w, now);
    while (w.waiters.length > 0 && w.waiters[0]!.count <= w.allowance) {
      const waiter = w.waiters.shift()!;
      waiter.resolve(this.#admit(w, waiter.count, now, newDecision()));
    }
    if (w.waiters.length === 0) return;
    if (this.#alone()) {
      for (const waiter of w.waiters.splice(0)) waiter.resolve(this.#decideAlone(w, waiter.count, now, newDecision()));
      return;
    }
    if (!w.asking) this.#ask(w);
  }

  /** One step to Redis for the key's window: grants for the waiters and ahead of demand, and the counts owed. */
  #ask(w: KeyWindow): void {
    const shared = this.#shared!;
    // The allowance here covers part of the first waiter (a batch): Redis is asked for the rest.
    const need = Math.max(0, w.waiters.reduce((sum, waiter) => sum + waiter.count, 0) - w.allowance);
    const min = w.waiters.length > 0 ? w.waiters[0]!.count - w.allowance : 0;
    w.perRound = w.sinceAsk;
    w.sinceAsk = 0;
    const want = need + Math.min(MAX_AHEAD, 2 * w.perRound);
    if (want === 0 && w.owed === 0) return;
    const sent = { window: w.window, owed: w.owed, min };
    w.asking = true;
    shared
      .take({ keyId: w.keyId, window: w.window, limit: this.limit, owed: sent.owed, min, want, expireAt: w.resetAt + WINDOW_MS })
      .then(
        (answer) => this.#answered(w, sent, answer),
        () => {
          w.asking = false;
          // Not known to have reached Redis: the owed counts stay to be sent again (counted twice at worst, never missed).
          this.#away = true;
          this.#pump(w);
        },
      );
  }

  #answered(w: KeyWindow, sent: { window: number; owed: number; min: number }, answer: Allowance): void {
    w.asking = false;
    this.#away = false;
    // The window rolled over meanwhile: the answer is about a window that is over.
    if (w.window !== sent.window) return this.#pump(w);
    w.owed -= sent.owed;
    w.taken = answer.taken;
    w.allowance += answer.granted;
    const now = this.#clock();
    w.spentAt = answer.taken >= this.limit ? now : 0;
    if (answer.granted === 0 && sent.min > 0) {
      // The first waiter does not fit what is left: it, and every waiter larger than what is left, is refused now.
      const left = this.#left(w);
      const refused = w.waiters.filter((waiter) => waiter.count > left);
      w.waiters.splice(0, w.waiters.length, ...w.waiters.filter((waiter) => waiter.count <= left));
      for (const waiter of refused) waiter.resolve(this.#refuse(w, now, newDecision()));
    }
    this.#pump(w);
  }

  #windowOf(keyId: string, now: number): KeyWindow {
    let w = this.#windows.get(keyId);
    if (w === undefined) w = this.#track(keyId, now);
    else if (now >= w.resetAt) this.#roll(w, now);
    return w;
  }

  #track(keyId: string, nowMs: number): KeyWindow {
    if (this.#windows.size >= MAX_TRACKED) {
      for (const [id, old] of this.#windows) if (old.resetAt <= nowMs && old.waiters.length === 0 && !old.asking) this.#windows.delete(id);
    }
    const w: KeyWindow = {
      keyId,
      offsetMs: windowOffset(keyId),
      window: 0,
      resetAt: 0,
      taken: 0,
      allowance: 0,
      owed: 0,
      waiters: [],
      asking: false,
      sinceAsk: 0,
      perRound: 0,
      lastUseAt: nowMs,
      spentAt: 0,
    };
    this.#roll(w, nowMs);
    this.#windows.set(keyId, w);
    return w;
  }

  /** A new window: the old one's allowance is dropped with it (its total expires in Redis), the waiters stay, to ask in the new one. */
  #roll(w: KeyWindow, nowMs: number): void {
    w.window = Math.floor((nowMs - w.offsetMs) / WINDOW_MS);
    w.resetAt = (w.window + 1) * WINDOW_MS + w.offsetMs;
    w.taken = 0;
    w.allowance = 0;
    w.owed = 0;
    w.spentAt = 0;
  }
}

function newDecision(): RateDecision {
  return { admitted: true, remaining: 0, resetSeconds: 0 };
}

/** A key's offset within the minute, from its id (FNV-1a): the same on every instance, different across keys. */
export function windowOffset(keyId: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < keyId.length; i++) h = Math.imul(h ^ keyId.charCodeAt(i), 0x01000193);
  return (h >>> 0) % WINDOW_MS;
}
