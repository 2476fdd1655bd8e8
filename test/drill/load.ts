/**
 * The drill's steady load through the balancer: writers that each own their pets and PATCH them
 * with an Idempotency-Key, resending a failed PATCH with the same key until it is acknowledged (as
 * a client should), and readers that GET. Every attempt's outcome is counted, and a failure by the
 * phase it failed in and its cause.
 */

/** What an attempt came to: `ok`, or its cause of failure (`HTTP 502`, `ECONNRESET`, ...). */
type Outcome = string;

export interface LoadOptions {
  baseUrl: string;
  key: string;
  writers: number;
  readers: number;
  /** The pets of writer w: petsPerWriter of them from w * petsPerWriter + 1. */
  petsPerWriter: number;
  /** How long a failed PATCH is resent before the drill gives up on it (a deadline on waiting). */
  resendForMs: number;
}

export class Load {
  /** The phase requests are sent in now; the drill moves it on. */
  phase = 'steady';
  /** petId → the quantity of its last acknowledged PATCH. */
  readonly acknowledged = new Map<number, number>();
  /** "PATCH ok", "GET ok": attempts that succeeded, by kind. */
  readonly requests = new Map<string, number>();
  /** "phase|kind|cause" → failed attempts. */
  readonly failures = new Map<string, number>();
  /** PATCHes resent after a failure and acknowledged as replays (Idempotent-Replayed: the first attempt had been applied). */
  replays = 0;
  /** Writes never acknowledged within resendForMs, and answers no retry can fix (4xx): the drill fails on any. */
  readonly unresolved: string[] = [];
  #stopped = false;
  #running: Promise<void>[] = [];
  readonly #options: LoadOptions;

  constructor(options: LoadOptions) {
    this.#options = options;
  }

  start(): void {
    const { writers, readers } = this.#options;
    this.#running = [...Array.from({ length: writers }, (_, w) => this.#writer(w)), ...Array.from({ length: readers }, (_, r) => this.#reader(r))];
  }

  /** Stops sending new requests; resolves once every writer's last write was acknowledged (or given up). */
  async stop(): Promise<void> {
    this.#stopped = true;
    await Promise.all(this.#running);
  }

  failuresIn(phase: string): number {
    let n = 0;
    for (const [key, count] of this.failures) if (key.startsWith(`${phase}|`)) n += count;
    return n;
  }

  get pets(): number[] {
    return Array.from({ length: this.#options.writers * this.#options.petsPerWriter }, (_, i) => i + 1);
  }

  async #writer(w: number): Promise<void> {
    const { petsPerWriter, resendForMs } = this.#options;
    for (let n = 0; !this.#stopped; n++) {
      const petId = w * petsPerWriter + (n % petsPerWriter) + 1;
      const quantity = n + 1;
      const idempotencyKey = `drill-${w}-${n}`;
      const since = Date.now();
      for (let attempt = 0; ; attempt++) {
        const res = await this.#send('PATCH', `/v1/inventory/${petId}`, { quantity }, { 'idempotency-key': idempotencyKey });
        if (res.outcome === 'ok') {
          this.acknowledged.set(petId, quantity);
          if (attempt > 0 && res.replayed) this.replays++;
          break;
        }
        if (res.final || Date.now() - since > resendForMs) {
          this.unresolved.push(`PATCH pet ${petId} to ${quantity}: ${res.outcome}`);
          return;
        }
        await sleep(50);
      }
    }
  }

  async #reader(r: number): Promise<void> {
    const pets = this.pets.length;
    for (let n = 0; !this.#stopped; n++) {
      const res = await this.#send('GET', `/v1/inventory/${((r + n * 7) % pets) + 1}`);
      if (res.final) this.unresolved.push(`GET: ${res.outcome}`);
    }
  }

  /** One attempt, counted; `final` when its answer is one no resend can change (a 4xx). */
  async #send(method: string, path: string, body?: object, headers: Record<string, string> = {}): Promise<{ outcome: Outcome; replayed: boolean; final: boolean }> {
    let outcome: Outcome;
    let replayed = false;
    try {
      const res = await fetch(`${this.#options.baseUrl}${path}`, {
        method,
        headers: { authorization: `Bearer ${this.#options.key}`, ...(body ? { 'content-type': 'application/json' } : {}), ...headers },
        ...(body ? { body: JSON.stringify(body) } : {}),
        signal: AbortSignal.timeout(30_000),
      });
      await res.arrayBuffer();
      outcome = res.ok ? 'ok' : `HTTP ${res.status}`;
      replayed = res.headers.get('idempotent-replayed') === 'true';
    } catch (err) {
      outcome = causeOf(err);
    }
    if (outcome === 'ok') increment(this.requests, `${method} ok`);
    // The phase it failed in: a request in flight on an instance killed at the start of a phase fails in that phase.
    else increment(this.failures, `${this.phase}|${method}|${outcome}`);
    return { outcome, replayed, final: /^HTTP 4/.test(outcome) };
  }
}

/** The lowest-level code a failed fetch carries: ECONNRESET, UND_ERR_SOCKET (the other side closed), a timeout. */
function causeOf(err: unknown): string {
  let e: unknown = err;
  while (e instanceof Error && e.cause !== undefined) e = e.cause;
  if (e instanceof Error) return (e as NodeJS.ErrnoException).code ?? e.name;
  return String(e);
}

function increment(map: Map<string, number>, key: string): void {
  map.set(key, (map.get(key) ?? 0) + 1);
}

function sleep(ms: number): Promise<void> {
  return new Promise((done) => setTimeout(done, ms));
}
