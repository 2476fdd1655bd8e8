/** The draft's policy name: one policy, so one name. */
export const POLICY_NAME = 'default';
export const WINDOW_MS = 60_000;
/** Past this many keys with a live window, expired windows are dropped before another is added. */
const MAX_TRACKED = 100_000;

/** One key's window: what this process admitted, and the total of every instance as Redis last said. */
interface KeyWindow {
  readonly keyId: string;
  /** Where this key's windows begin within the minute: spread per key, so not every client's quota resets at once. */
  readonly offsetMs: number;
  /** Which window the counts are of: whole windows since the epoch (plus the offset), the same number on every instance. */
  window: number;
  /** When the window ends, in ms since the epoch. */
  resetAt: number;
  /** The shared total as Redis last answered it, our own sent counts included (0 without Redis). */
  shared: number;
  /** Admitted here, sent to Redis, not answered yet. */
  sending: number;
  /** Admitted here since the last send. */
  pending: number;
}

/** What the last `take` decided; one object, overwritten by each call and read at once (no allocation per request). */
export interface RateDecision {
  admitted: boolean;
  /** Requests the key has left in its window after this one. */
  remaining: number;
  /** Whole seconds until the window resets (1 to 60): `t` of the RateLimit header, and Retry-After of a refusal. */
  resetSeconds: number;
}

/** One window's count of one key, as sent to the shared store. */
export interface WindowCount {
  keyId: string;
  window: number;
  count: number;
  /** When the shared total may be forgotten (ms since the epoch). */
  expireAt: number;
}

/** Where instances add up their counts (Redis): see src/limits/redis-counts.ts. */
export interface SharedCounts {
  /** Whether a batch sent now can be answered (connected); while not, the counts stay local. */
  ready(): boolean;
  /** Adds each count to its window's total; resolves with the totals after the additions, in order. */
  add(batch: readonly WindowCount[]): Promise<number[]>;
  close(): Promise<void>;
}

/**
 * Requests per API key in fixed one-minute windows, decided from memory: the request path never
 * waits. With a SharedCounts (Redis), the counts admitted here are sent in batches every
 * `syncIntervalMs` and each answer brings back the total of every instance, so an instance can
 * over-admit, beyond the limit, at most what it receives for the key during one round (interval
 * plus round trip). While Redis is away, each process goes on with the counts it knows (fail
 * open): the API stays up, the limit becomes per process.
 */
export class RateLimiter {
  readonly limit: number;
  /** The RateLimit-Policy header, the same on every answer. */
  readonly policyHeader: string;
  readonly decision: RateDecision = { admitted: true, remaining: 0, resetSeconds: 0 };
  readonly #windows = new Map<string, KeyWindow>();
  readonly #shared: SharedCounts | undefined;
  /** Windows with counts not yet sent (a window may appear twice; the second finds nothing pending). */
  #dirty: KeyWindow[] = [];
  #sending = false;
  readonly #timer: NodeJS.Timeout | undefined;

  constructor(limitPerMinute: number, shared?: SharedCounts, syncIntervalMs = 25) {
    this.limit = limitPerMinute;
    this.policyHeader = `"${POLICY_NAME}";q=${limitPerMinute};w=${WINDOW_MS / 1000}`;
    this.#shared = shared;
    if (shared) this.#timer = setInterval(() => this.sync(), syncIntervalMs).unref();
  }

  /**
   * Counts `count` requests of `keyId` (a batch's changes beyond its first: decisions 5.12) if its
   * window has room for all of them, else none; the verdict is in `decision`.
   */
  take(keyId: string, nowMs: number, count = 1): RateDecision {
    let w = this.#windows.get(keyId);
    if (w === undefined) w = this.#track(keyId, nowMs);
    else if (nowMs >= w.resetAt) this.#roll(w, nowMs);
    const used = w.shared + w.sending + w.pending;
    const d = this.decision;
    d.admitted = used + count <= this.limit;
    if (d.admitted && count > 0) {
      if (w.pending === 0 && this.#shared) this.#dirty.push(w);
      w.pending += count;
    }
    // Refused, the count is what is left as it was: a batch too large for it may still fit smaller.
    d.remaining = d.admitted ? this.limit - used - count : Math.max(0, this.limit - used);
    d.resetSeconds = Math.ceil((w.resetAt - nowMs) / 1000);
    return d;
  }

  /** The RateLimit header of the last decision: remaining requests and seconds to the reset. */
  rateLimitHeader(d: RateDecision): string {
    return `"${POLICY_NAME}";r=${d.remaining};t=${d.resetSeconds}`;
  }

  /** Sends the counts admitted since the last round, unless a round is under way or Redis is away (they wait, still counted here). */
  sync(): void {
    const shared = this.#shared;
    if (!shared || this.#sending || this.#dirty.length === 0 || !shared.ready()) return;
    const windows = this.#dirty.filter((w) => w.pending > 0);
    this.#dirty = [];
    if (windows.length === 0) return;
    const batch: WindowCount[] = windows.map((w) => {
      const count = w.pending;
      w.pending = 0;
      w.sending += count;
      return { keyId: w.keyId, window: w.window, count, expireAt: w.resetAt + WINDOW_MS };
    });
    this.#sending = true;
    const settle = (totals: number[] | undefined) => {
      this.#sending = false;
      batch.forEach((sent, i) => {
        const w = windows[i]!;
        // The window rolled over meanwhile: the answer is about a window that is over.
        if (w.window !== sent.window) return;
        w.sending -= sent.count;
        // Not known to have reached Redis: still counted here, never sent twice.
        w.shared = totals ? Math.max(w.shared + sent.count, totals[i]!) : w.shared + sent.count;
      });
    };
    shared.add(batch).then(settle, () => settle(undefined));
  }

  async close(): Promise<void> {
    clearInterval(this.#timer);
    await this.#shared?.close();
  }

  #track(keyId: string, nowMs: number): KeyWindow {
    if (this.#windows.size >= MAX_TRACKED) {
      for (const [id, old] of this.#windows) if (old.resetAt <= nowMs) this.#windows.delete(id);
    }
    const w: KeyWindow = { keyId, offsetMs: windowOffset(keyId), window: 0, resetAt: 0, shared: 0, sending: 0, pending: 0 };
    this.#roll(w, nowMs);
    this.#windows.set(keyId, w);
    return w;
  }

  #roll(w: KeyWindow, nowMs: number): void {
    w.window = Math.floor((nowMs - w.offsetMs) / WINDOW_MS);
    w.resetAt = (w.window + 1) * WINDOW_MS + w.offsetMs;
    w.shared = 0;
    w.sending = 0;
    w.pending = 0;
  }
}

/** A key's offset within the minute, from its id (FNV-1a): the same on every instance, different across keys. */
export function windowOffset(keyId: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < keyId.length; i++) h = Math.imul(h ^ keyId.charCodeAt(i), 0x01000193);
  return (h >>> 0) % WINDOW_MS;
}
