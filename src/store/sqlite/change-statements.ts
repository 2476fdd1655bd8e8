import type Database from 'better-sqlite3';
import type { IdempotencyRecord, RecordsCap } from '../../domain/idempotency.js';
import type { judgeChange, IdempotencyRequest, InventoryEntry, QuantityChange } from '../../domain/inventory.js';
import { changeLogWriter } from './change-log.js';
import { LIMIT } from './connection.js';
import { linkedEntryReader } from './entries.js';
import { isoTime } from './iso-time.js';

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
  /** Writes an applied change's history row and entry; the entry as the change leaves it. */
  apply(change: QuantityChange, verdict: Applicable): InventoryEntry;
  /**
   * Records the changes applied in this transaction, once, after the last of them (their pets, in
   * order; none: nothing to record): an inventory.updated event (domain/event.ts) for each, made of
   * its history row and entry by one statement rather than one per change, unless `omitEvents`;
   * then the store version, the events head and the change log (change-log.ts), last as in every write.
   */
  recordApplied(petIds: readonly bigint[], omitEvents: boolean): void;
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

/**
 * ChangeStatements.recordApplied's events: the transaction's changes wrote the newest history rows, one
 * each, with consecutive ids, so the last :count are theirs; a pet changes at most once a transaction
 * (group-commit.ts, domain repeatedPet), so its entry holds the status and version its change left.
 * The bound is written out in the WHERE, so SQLite reads a range of rowids, not the whole history.
 */
export const UPDATED_EVENTS = `INSERT INTO inventory_events (seq, type, occurred_at, pet_id, status, previous_quantity, quantity, version, reason, source, key_id, request_id)
  SELECT (SELECT events_head FROM store_state WHERE id = 1) + h.id - ((SELECT max(id) FROM inventory_history) - :count), 'inventory.updated', h.at,
         h.pet_id, i.status, h.previous_quantity, h.quantity, i.version, h.reason, 'api', h.key_id, h.request_id
  FROM inventory_history h JOIN inventory i ON i.pet_id = h.pet_id
  WHERE h.id > (SELECT max(id) FROM inventory_history) - :count
  ORDER BY h.id`;

const statementsOf = new WeakMap<Database.Database, ChangeStatements>();

/** The connection's ChangeStatements, prepared at its first change. */
export function changeStatements(db: Database.Database): ChangeStatements {
  let made = statementsOf.get(db);
  if (!made) statementsOf.set(db, (made = prepareStatements(db)));
  return made;
}

function prepareStatements(db: Database.Database): ChangeStatements {
  const stmt = {
    // The previous quantity and the link to the pet's newest history row come from the entry read (under the write lock, so current).
    insertHistory: db.prepare(
      `INSERT INTO inventory_history (pet_id, previous_quantity, quantity, at, key_id, key_name, request_id, reason, prev_id)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    update: db.prepare('UPDATE inventory SET quantity = ?, version = version + 1, last_history_id = last_insert_rowid(), updated_at = ? WHERE pet_id = ?'),
    updatedEvents: db.prepare(UPDATED_EVENTS),
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
  const logWrite = changeLogWriter(db);
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
      const at = isoTime(change.at);
      const prevId = links.get(current);
      if (prevId === undefined) throw new Error('a change applies only to an entry its statements read');
      stmt.insertHistory.run(change.petId, current.item.quantity, quantity, at, change.keyId, change.keyName, change.requestId, change.reason, prevId);
      stmt.update.run(quantity, at, change.petId);
      // No RETURNING: the new version is the one read + 1, under the write lock.
      return { item: { ...current.item, quantity }, version: current.version + 1 };
    },
    recordApplied(petIds, omitEvents) {
      if (petIds.length === 0) return;
      if (!omitEvents) stmt.updatedEvents.run({ count: petIds.length });
      logWrite(petIds, omitEvents ? 0 : petIds.length);
    },
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
