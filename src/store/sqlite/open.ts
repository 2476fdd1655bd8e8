import { AppendedSignal, batchAppended, batchAppendedEvents } from '../appended.js';
import { changeGroupCommit, reservationGroupCommit, serialCommit } from '../group-commit.js';
import type { ChangeBatch, ChangeBatchResult } from '../../domain/inventory.js';
import type { Store } from '../store.js';
import { errorOf, type BatchResult } from './apply-batch.js';
import { changes } from './changes.js';
import { asUnavailable, openSqliteConnection, runOn } from './connection.js';
import { entries } from './entries.js';
import { events } from './events.js';
import { history } from './history.js';
import { keys } from './keys.js';
import { maintenance } from './maintenance.js';
import { migrate } from './migrations.js';
import { relays } from './relays.js';
import { reservations } from './reservations.js';
import { webhookDeliveries } from './webhook-deliveries.js';
import { webhookEndpoints } from './webhook-endpoints.js';
import { inThreadWriter, threadWriter } from './writer.js';

/**
 * Opens (creating if needed) the SQLite store at `filename` (":memory:" for a private in-memory
 * database), applies pending migrations and prepares every statement once. `timeoutMs`
 * (STORE_TIMEOUT_MS): the longest a change waits for its batch to commit, a batch in flight before
 * it included (503 past it). `omitChangeEvents`: see StoreOpenOptions (the bench's alone).
 */
export function openStore(filename: string, options: { timeoutMs?: number; omitChangeEvents?: boolean } = {}): Store {
  const db = openSqliteConnection(filename);
  try {
    migrate(db);
  } catch (err) {
    db.close();
    throw err;
  }
  // A private :memory: database exists only on this connection, so it cannot have a writer thread.
  const inThread = filename === ':memory:';
  const omitEvents = options.omitChangeEvents ?? false;
  const writer = inThread ? inThreadWriter(db, { omitEvents }) : threadWriter(filename, { omitEvents });
  const appended = new AppendedSignal();
  const endpointsChanged = new AppendedSignal();
  const groupCommit = changeGroupCommit(async (batch) => {
    let results: BatchResult[];
    try {
      results = await writer.apply(batch);
    } catch (err) {
      throw asUnavailable(err);
    }
    const answers = results.map((result) => ('error' in result ? asUnavailable(errorOf(result)) : result));
    if (!omitEvents && batchAppended(answers)) appended.emit();
    return answers;
  }, options);
  // A ChangeBatch: all or nothing in one transaction of its own, in the writer thread as every change.
  const batches = serialCommit(async (batch: ChangeBatch) => {
    let result: ChangeBatchResult;
    try {
      result = await writer.applyChangeBatch(batch);
    } catch (err) {
      throw asUnavailable(err);
    }
    if (!omitEvents && batchAppendedEvents(result)) appended.emit();
    return result;
  }, options);
  // Reservations' creations and ends: those waiting together in one transaction of the writer thread (reservation-writes.ts).
  const reservationOps = reservationGroupCommit(async (writes) => {
    try {
      return await writer.reservationOps(writes);
    } catch (err) {
      throw asUnavailable(err);
    }
  }, options);
  const reservationCommits = {
    ops: reservationOps,
    expireDue: async (_: void) => {
      try {
        return await writer.expireDue();
      } catch (err) {
        throw asUnavailable(err);
      }
    },
  };
  const run = runOn(db);
  let closing: Promise<void> | undefined;
  return {
    backend: 'sqlite',
    entries: entries(db, run),
    changes: changes(db, run, { groupCommit, batches }, appended),
    keys: keys(db, run),
    history: history(db, run),
    events: events(db, run, appended),
    webhookEndpoints: webhookEndpoints(db, run, writer, endpointsChanged),
    webhookDeliveries: webhookDeliveries(db, run, writer, endpointsChanged),
    relays: relays(db, run, writer),
    reservations: reservations(db, run, reservationCommits, appended),
    maintenance: maintenance(db, run, writer, { inThread }),
    close() {
      closing ??= (async () => {
        if (!db.open) return;
        appended.close();
        endpointsChanged.close();
        await Promise.all([groupCommit.close(), batches.close(), reservationOps.close()]);
        await writer.close();
        db.close();
      })();
      return closing;
    },
  };
}
