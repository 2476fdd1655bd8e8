/** What a process asks of the shared store for one key's window, in one atomic step. */
export interface AllowanceAsk {
  keyId: string;
  /** Whole windows since the epoch (plus the key's offset): the same number on every instance. */
  window: number;
  limit: number;
  /** Admitted here while the store was away, not counted there yet: added to the total whatever it is. */
  owed: number;
  /** The fewest requests worth granting (a batch's count, all or none); 0 asks only for an allowance ahead of demand. */
  min: number;
  /** The most wanted: the requests waiting here, and what this process expects to admit before it asks again. */
  want: number;
  /** When the window's total may be forgotten (ms since the epoch). */
  expireAt: number;
}

/** The store's answer: what it granted this process, and the window's total after the step. */
export interface Allowance {
  granted: number;
  /** Every grant of the window to every process, owed counts included, less what was given back. */
  taken: number;
}

/**
 * Where the instances and workers of the service share each key's window (Redis: see
 * src/limits/redis-allowances.ts). A process takes allowances from it and gives back what it did
 * not use, so the window's total never exceeds the limit, and every request admitted was granted.
 */
export interface SharedAllowances {
  /** Whether a step sent now can be answered (connected); while not, the limiter decides alone. */
  ready(): boolean;
  /** Grants up to `want` requests, at least `min` or none, fewer as the window fills (decisions 7.10). */
  take(ask: AllowanceAsk): Promise<Allowance>;
  /** Gives `count` unused requests of the window back, for other processes to take. */
  giveBack(keyId: string, window: number, count: number): Promise<void>;
  close(): Promise<void>;
}
