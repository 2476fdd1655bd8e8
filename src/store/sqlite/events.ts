import type Database from 'better-sqlite3';
import type { InventoryEvent } from '../../domain/event.js';
import { eventCountOf, type TypeCount } from '../event-count.js';
import { eventOfRow } from '../../domain/reservation-events.js';
import type { AppendedSignal } from '../appended.js';
import { inBatches, oldPrefix, PRUNE_BATCH } from '../pruning.js';
import type { EventCount, EventPage, Events } from '../store.js';
import { briefly, LIMIT, type Run } from './connection.js';

type EventRow = [
  seq: bigint,
  type: string,
  occurredAt: string,
  petId: bigint | null,
  status: string,
  previousQuantity: bigint | null,
  quantity: bigint | null,
  version: bigint | null,
  reason: string | null,
  source: string,
  keyId: string | null,
  requestId: string | null,
  payload: string | null,
];

/**
 * The SQLite store's event log, read on the event loop's connection (WAL: a read never waits for
 * the writer). Events are appended by the writes themselves (change-log.ts), under SQLite's one
 * write lock, so seq order is commit order. onAppended hears this process's own commits only:
 * another process on the same file is learned of by reading.
 */
export function events(db: Database.Database, run: Run, appended: AppendedSignal): Events {
  const stmt = {
    state: db.prepare('SELECT events_head, events_pruned FROM store_state WHERE id = 1').raw(true),
    page: db
      .prepare(
        `SELECT seq, type, occurred_at, pet_id, status, previous_quantity, quantity, version, reason, source, key_id, request_id, payload
         FROM inventory_events WHERE seq > ? ORDER BY seq LIMIT ${LIMIT}`,
      )
      .raw(true)
      .safeIntegers(true),
    // The next `limit` events by seq, counted by type, and the last seq of each type: no event is read out whole.
    count: db
      .prepare(`SELECT type, count(*), max(seq) FROM (SELECT seq, type FROM inventory_events WHERE seq > ? ORDER BY seq LIMIT ${LIMIT}) GROUP BY type`)
      .raw(true),
    // The oldest events, by seq, which is commit order.
    oldest: db.prepare(`SELECT seq, occurred_at FROM inventory_events WHERE seq > ? ORDER BY seq LIMIT ${LIMIT}`).raw(true),
    prune: db.prepare('DELETE FROM inventory_events WHERE seq <= ?'),
    setPruned: db.prepare('UPDATE store_state SET events_pruned = max(events_pruned, ?) WHERE id = 1'),
  };
  // One read transaction: the head, the pruned mark and the events come from one snapshot.
  const read = db.transaction((after: number, limit: number): EventPage => {
    const [head, pruned] = stmt.state.get() as [number, number];
    if (after < pruned) return { items: [], head, pruned: true };
    return { items: (stmt.page.all(after, limit) as EventRow[]).map(toEvent), head, pruned: false };
  });
  const count = db.transaction((after: number, limit: number): EventCount => {
    const head = Number((stmt.state.get() as [number, number])[0]);
    return eventCountOf(after, head, stmt.count.all(after, limit) as TypeCount[]);
  });
  // Events are pruned as a prefix of seqs (the leading run that is old enough), and the mark moved with them.
  const pruneStep = db.transaction((after: number, cutoff: string) => {
    const head = stmt.oldest.all(after, PRUNE_BATCH) as [seq: number, at: string][];
    const { last, more } = oldPrefix(head, (at) => at < cutoff);
    if (last === undefined) return { deleted: 0 };
    const deleted = stmt.prune.run(last).changes;
    stmt.setPruned.run(last);
    return more ? { deleted, next: last } : { deleted };
  });

  return {
    readEvents: async (after, limit) => run(() => read.deferred(after, limit)),
    countEvents: async (after, limit) => run(() => count.deferred(after, limit)),
    head: async () => run(() => Number((stmt.state.get() as [number, number])[0])),
    onAppended: (listener) => appended.on(listener),
    async purgeEvents(before) {
      const cutoff = before.toISOString();
      return inBatches(0, async (after) => run(() => briefly(db, () => pruneStep.immediate(after, cutoff))));
    },
  };
}

function toEvent(row: EventRow): InventoryEvent {
  const count = (n: bigint | null) => (n === null ? null : Number(n));
  return eventOfRow({
    seq: Number(row[0]),
    type: row[1],
    occurredAt: new Date(row[2]),
    petId: row[3],
    status: row[4],
    previousQuantity: count(row[5]),
    quantity: count(row[6]),
    version: count(row[7]),
    reason: row[8],
    source: row[9],
    keyId: row[10],
    requestId: row[11],
    payload: row[12],
  });
}
