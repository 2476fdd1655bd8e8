import type Database from 'better-sqlite3';
import type { IdempotencyRecord, RecordsCap } from '../../domain/idempotency.js';
import type { judgeChange, IdempotencyRequest, InventoryEntry, QuantityChange } from '../../domain/inventory.js';
import { changeLog } from './change-log.js';
import { LIMIT, perConnection } from './connection.js';
import { linkedEntryReader } from './entries.js';

/** What a change applies: the entry it found, and the count judgeChange set. */
type Applicable = Extract<ReturnType<typeof judgeChange>, { kind: 'apply' }>;

/**
 * The statements that write a change, prepared once per connection and shared by the group
 * commit's batches (apply-batch.ts) and a ChangeBatch's transaction (apply-change-batch.ts). Call inside
 * an IMMEDIATE transaction.
 */
export interface ChangeStatements {
  /** The entry a change finds, or undefined (none, or retired). */
  entry(petId: bigint): InventoryEntry | undefined;
  /** Writes an applied change through the change log (change-log.ts): its history row and the entry; the entry as the change leaves it. */
  apply(change: QuantityChange, verdict: Applicable): InventoryEntry;
  /**
   * Records the changes applied in this transaction, once, after the last of them (in order; none:
   * nothing to record): their events unless `omitEvents`, then the store version, the events head
   * and the change log (change-log.ts), last as in every write.
   */
  recordApplied(applied: readonly Pick<QuantityChange, 'petId' | 'source'>[], omitEvents: boolean): void;
  /** The record of an API key's idempotency key (by its hash), expired ones too (reusing one takes no new row, so never counts against the cap). */
  findRecord(keyId: string, keyHash: string, now: Date): IdempotencyRecord | undefined;
  /** Stores an outcome under the key's hash (an expired or outcome-less record is written over). */
  saveRecord(keyId: string, keyHash: string, idem: IdempotencyRequest, outcome: string, now: Date): void;
  /**
   * An API key's records as domain refusePastCap asks for them, at `now`: its count read from
   * idempotency_counts (kept by triggers), so a PATCH never counts rows. Under SQLite's one write
   * lock, so the count is exact across processes.
   */
  recordsCap(keyId: string, now: Date): RecordsCap<false>;
}

/** The connection's ChangeStatements, prepared at its first change. */
export const changeStatements = perConnection(prepareStatements);

function prepareStatements(db: Database.Database): ChangeStatements {
  const stmt = {
    findIdempotency: db.prepare('SELECT fingerprint, outcome, expires_at <= ? AS expired FROM idempotency_records WHERE api_key_id = ? AND key_hash = ?'),
    saveIdempotency: db.prepare(
      `INSERT INTO idempotency_records (api_key_id, key_hash, fingerprint, outcome, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (api_key_id, key_hash) DO UPDATE SET fingerprint = excluded.fingerprint, outcome = excluded.outcome,
         created_at = excluded.created_at, expires_at = excluded.expires_at`,
    ),
    count: db.prepare('SELECT records FROM idempotency_counts WHERE api_key_id = ?').pluck(),
    reclaim: db.prepare(
      `DELETE FROM idempotency_records WHERE rowid IN
         (SELECT rowid FROM idempotency_records WHERE api_key_id = ? AND expires_at <= ? ORDER BY expires_at LIMIT ${LIMIT})`,
    ),
    oldestLive: db.prepare('SELECT min(expires_at) FROM idempotency_records WHERE api_key_id = ? AND expires_at > ?').pluck(),
  };
  const read = linkedEntryReader(db);
  const log = changeLog(db);
  // Each entry read here, to the newest history row it had: apply links the next row to it. Kept per entry, not as
  // the last read, since a ChangeBatch reads all its entries before it applies any (apply-change-batch.ts).
  const links = new WeakMap<InventoryEntry, bigint | null>();
  return {
    entry(petId) {
      const found = read(petId);
      if (!found) return undefined;
      links.set(found.entry, found.lastHistoryId);
      return found.entry;
    },
    apply(change, { current, quantity }) {
      const lastHistoryId = links.get(current);
      if (lastHistoryId === undefined) throw new Error('a change applies only to an entry its statements read');
      return log.change(change, current, lastHistoryId, quantity);
    },
    recordApplied: (applied, omitEvents) => log.changed(applied, omitEvents),
    findRecord(keyId, keyHash, now) {
      const found = stmt.findIdempotency.get(now.toISOString(), keyId, keyHash) as
        | { fingerprint: string; outcome: string | null; expired: number }
        | undefined;
      return found && { ...found, expired: found.expired === 1 };
    },
    saveRecord(keyId, keyHash, idem, outcome, now) {
      stmt.saveIdempotency.run(keyId, keyHash, idem.fingerprint, outcome, now.toISOString(), idem.expiresAt.toISOString());
    },
    recordsCap(keyId, now) {
      const at = now.toISOString();
      return {
        held: () => Number(stmt.count.get(keyId) ?? 0),
        reclaimExpired: (count) => stmt.reclaim.run(keyId, at, count).changes,
        oldestLive() {
          const oldest = stmt.oldestLive.get(keyId, at) as string | null;
          return oldest === null ? undefined : new Date(oldest);
        },
      };
    },
  };
}
