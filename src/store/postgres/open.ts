import { clock, DEFAULT_STORE_TIMEOUT_MS } from '../deadline.js';
import { AppendedSignal, batchAppended, batchAppendedEvents } from '../appended.js';
import { changeGroupCommit } from '../group-commit.js';
import type { ChangeBatch } from '../../domain/inventory.js';
import type { Store } from '../store.js';
import { applyBatch, type Database } from './apply-batch.js';
import { applyChangeBatch } from './apply-change-batch.js';
import { changes } from './changes.js';
import { asUnopenable, inTransaction, openListenClient, openPool, pooled, queryBy, queryOnPool, type PostgresStoreOptions, type StorePool } from './connection.js';
import { entries } from './entries.js';
import { channelListener, eventChannel, events } from './events.js';
import { history } from './history.js';
import { keys } from './keys.js';
import { maintenance } from './maintenance.js';
import { migrate } from './migrations.js';
import { storeAddress } from './unreachable.js';
import { relays } from './relays.js';
import { reservations } from './reservations.js';
import { webhookDeliveries } from './webhook-deliveries.js';
import { webhookEndpoints } from './webhook-endpoints.js';

/**
 * Opens a pool on the PostgreSQL database at `url`, applies pending migrations (once, however
 * many processes open at the same moment) and returns the store. `url` may go through a
 * transaction-mode pooler (every call is a transaction that sets what it needs); what needs a
 * session of its own, the migrations and the event log's LISTEN, goes to `options.directUrl`
 * when given. Each call a request makes ends within `timeoutMs` (STORE_TIMEOUT_MS) of when it was
 * made, waiting for a connection included; a change of quantity within `timeoutMs` of its submit,
 * waiting behind the batch in flight included.
 */
export async function openStore(url: string, options: PostgresStoreOptions = {}): Promise<Store> {
  const pool = openPool(url, options);
  try {
    await migrateAt(options.directUrl, pool, options);
  } catch (err) {
    await pool.end();
    // The migrations run on the direct URL when there is one: the failure is that address's.
    throw asUnopenable(err, options.directUrl === undefined ? pool.address : storeAddress(options.directUrl));
  }
  const timeoutMs = options.timeoutMs ?? DEFAULT_STORE_TIMEOUT_MS;
  const calls = pooled(pool, timeoutMs);
  const channel = eventChannel(options.schema);
  // Listens to the other instances' commits only while someone listens to onAppended.
  // Through a transaction-mode pooler a LISTEN is accepted but hears nothing: without a direct URL, other instances' commits reach the readers by their polling only.
  const listening = channelListener(() => openListenClient(options.directUrl ?? url, options), channel, {
    appended: () => appended.emit(),
    endpointsChanged: () => endpointsChanged.emit(),
  });
  // One LISTEN for both: it is held while either signal has a listener.
  const listened = { appended: false, endpointsChanged: false };
  const listen = (which: keyof typeof listened) => (on: boolean) => {
    listened[which] = on;
    listening(listened.appended || listened.endpointsChanged);
  };
  const appended = new AppendedSignal(listen('appended'));
  const endpointsChanged = new AppendedSignal(listen('endpointsChanged'));
  const log = { channel, appended, endpointsChanged };
  const omitEvents = options.omitChangeEvents ?? false;
  // Where a batch runs, every wait of it ending by `deadline`; a batch is given up once none of its changes is awaited any more.
  const batchDatabase = (deadline: number): Database => ({
    query: (statement, values) => queryOnPool(pool, { ...statement, values }, deadline),
    transaction: (fn) => inTransaction(pool, (client) => fn((statement, values) => queryBy(client, { ...statement, values }, deadline)), deadline),
    channel,
    omitEvents,
  });
  const groupCommit = changeGroupCommit(async (batch, deadline) => {
    const results = await calls.run(() => applyBatch(batchDatabase(deadline ?? clock() + timeoutMs), batch));
    if (!omitEvents && batchAppended(results)) appended.emit();
    return results;
  }, { timeoutMs });
  // A ChangeBatch: one transaction of its own, on any free connection, within the store timeout.
  const applyBatchNow = async (batch: ChangeBatch) => {
    const result = await calls.run(() => applyChangeBatch(batchDatabase(clock() + timeoutMs), batch));
    if (!omitEvents && batchAppendedEvents(result)) appended.emit();
    return result;
  };
  // Creations and ends waiting together share one transaction (reservations.ts, commitGroup).
  const reservationWrites = reservations(calls, log, (fn) => batchDatabase(clock() + timeoutMs).transaction(fn), timeoutMs);
  let closing: Promise<void> | undefined;
  return {
    backend: 'postgres',
    entries: entries(calls),
    changes: changes(calls, groupCommit, log, applyBatchNow),
    keys: keys(calls),
    history: history(calls),
    events: events(calls, log),
    webhookEndpoints: webhookEndpoints(calls, log),
    webhookDeliveries: webhookDeliveries(calls, log),
    relays: relays(calls),
    reservations: reservationWrites,
    maintenance: maintenance(calls),
    close() {
      appended.close();
      endpointsChanged.close();
      closing ??= Promise.all([groupCommit.close(), reservationWrites.close()]).then(() => calls.end());
      return closing;
    },
  };
}

/** The migrations on a connection of their own to `directUrl`, or on the store's pool without one (in one transaction, so a pooler does too). */
async function migrateAt(directUrl: string | undefined, pool: StorePool, options: PostgresStoreOptions): Promise<void> {
  if (directUrl === undefined) return migrate(pool, options.schema);
  const direct = openPool(directUrl, options);
  try {
    await migrate(direct, options.schema);
  } finally {
    await direct.end();
  }
}
