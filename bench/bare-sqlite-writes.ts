/**
 * What the durable SQLite baseline writes, whichever thread commits it (bare-durable-sqlite.ts): its
 * own tables in a database file of its own, and the transaction that applies one batch of changes.
 */
import Database from 'better-sqlite3';
import { rmSync } from 'node:fs';
import type { InventoryItem } from '../src/schemas/inventory.js';
import type { BareChange, BareResult, BareWrites } from './bare-durable.js';
import { BARE_KEY_ID, reservationAnswer, reservationPayload, type BareHold } from './bare-reservation.js';

/** A connection to the baseline's file, as durable as the service's: WAL, synchronous=FULL (a per-connection setting). */
export function bareConnection(filename: string): Database.Database {
  const db = new Database(filename);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  return db;
}

/**
 * A fresh file with the baseline's tables (one row per pet with its version and what reservations
 * hold of it, its history, its events, and the reservations with their items, keyed and indexed as
 * the service's: migrations.ts, reservations), seeded with `items`, each at version 1 as the service
 * seeds its entries. An event names its pet and counts, or (a reservation's) carries its payload.
 */
export function createBareDatabase(filename: string, items: readonly InventoryItem[]): Database.Database {
  for (const suffix of ['', '-wal', '-shm']) rmSync(filename + suffix, { force: true });
  const db = bareConnection(filename);
  db.exec(`
    CREATE TABLE inventory (pet_id INTEGER PRIMARY KEY, quantity INTEGER NOT NULL, status TEXT NOT NULL, version INTEGER NOT NULL DEFAULT 1,
      reserved INTEGER NOT NULL DEFAULT 0);
    CREATE TABLE history (id INTEGER PRIMARY KEY, pet_id INTEGER NOT NULL, previous_quantity INTEGER NOT NULL, quantity INTEGER NOT NULL, at TEXT NOT NULL);
    CREATE TABLE events (seq INTEGER PRIMARY KEY, type TEXT NOT NULL, occurred_at TEXT NOT NULL, pet_id INTEGER,
      previous_quantity INTEGER, quantity INTEGER, version INTEGER, request_id TEXT NOT NULL, payload TEXT);
    CREATE TABLE reservations (place INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, status TEXT NOT NULL, reference TEXT,
      created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL, ended_at INTEGER, key_id TEXT, request_id TEXT);
    CREATE INDEX reservations_due ON reservations (status, expires_at);
    CREATE TABLE reservation_items (place INTEGER NOT NULL, position INTEGER NOT NULL, pet_id INTEGER NOT NULL, quantity INTEGER NOT NULL,
      PRIMARY KEY (place, position));
    CREATE INDEX reservation_items_pet ON reservation_items (pet_id, place);
  `);
  const seed = db.prepare('INSERT INTO inventory (pet_id, quantity, status) VALUES (?, ?, ?)');
  db.transaction(() => {
    for (const item of items) seed.run(item.petId, item.quantity, item.status);
  })();
  return db;
}

/** Applies a batch in one IMMEDIATE transaction (one fsync) on `db`: each change's result, in order. */
export function bareCommitter(db: Database.Database, writes: BareWrites): (changes: readonly BareChange[]) => BareResult[] {
  const read = db.prepare('SELECT quantity, status, version FROM inventory WHERE pet_id = ?').raw(true);
  // The entry's version moves with every change, as the service's does (its ETag): the new one is the one read + 1, under the write lock.
  const update = db.prepare('UPDATE inventory SET quantity = ?, version = ? WHERE pet_id = ?');
  const history = db.prepare('INSERT INTO history (pet_id, previous_quantity, quantity, at) VALUES (?, ?, ?, ?)');
  const event = db.prepare('INSERT INTO events (type, occurred_at, pet_id, previous_quantity, quantity, version, request_id) VALUES (?, ?, ?, ?, ?, ?, ?)');
  const hold = reservationWriter(db);

  /** One change under the transaction's write lock: the row read, the new count judged, then written with the next version. */
  const applyOne = (change: BareChange): BareResult => {
    if (change.hold) return hold(change.petId, change.hold, change.requestId);
    const row = read.get(change.petId) as [number, string, number] | undefined;
    if (row === undefined) return 404;
    const [previous, status, version] = row;
    const quantity = change.delta === undefined ? change.quantity! : previous + change.delta;
    if (quantity < 0) return 409;
    update.run(quantity, version + 1, change.petId);
    const at = new Date().toISOString();
    if (writes !== 'entry') history.run(change.petId, previous, quantity, at);
    if (writes === 'events') event.run('inventory.updated', at, change.petId, previous, quantity, version + 1, change.requestId);
    return `{"petId":${change.petId},"quantity":${quantity},"status":"${status}"}`;
  };
  const commit = db.transaction((changes: readonly BareChange[]) => changes.map(applyOne));
  return (changes) => commit.immediate(changes);
}

/**
 * A reservation's creation under the transaction's write lock, as the service's store writes one
 * (store/sqlite/reservation-writes.ts): the entry read, what it has available (its count less what
 * is held, never below 0) judged, then the reservation's row, its item's, the entry's hold (its
 * version unchanged: a hold is no change of count) and the event reservation.created carrying the
 * reservation in its payload.
 */
function reservationWriter(db: Database.Database): (petId: number, hold: BareHold, requestId: string) => BareResult {
  const read = db.prepare('SELECT quantity, reserved FROM inventory WHERE pet_id = ?').raw(true);
  const insert = db
    .prepare('INSERT INTO reservations (id, status, reference, created_at, expires_at, key_id, request_id) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING place')
    .pluck();
  const insertItem = db.prepare('INSERT INTO reservation_items (place, position, pet_id, quantity) VALUES (?, ?, ?, ?)');
  const addHold = db.prepare('UPDATE inventory SET reserved = reserved + ? WHERE pet_id = ?');
  const event = db.prepare("INSERT INTO events (type, occurred_at, request_id, payload) VALUES ('reservation.created', ?, ?, ?)");
  return (petId, hold, requestId) => {
    const row = read.get(petId) as [number, number] | undefined;
    if (row === undefined) return 404;
    if (Math.max(0, row[0] - row[1]) < hold.quantity) return 409;
    const now = Date.now();
    const expiresAt = now + hold.ttlSeconds * 1000;
    const place = insert.get(hold.id, 'active', null, now, expiresAt, BARE_KEY_ID, requestId) as number;
    insertItem.run(place, 0, petId, hold.quantity);
    addHold.run(hold.quantity, petId);
    event.run(new Date(now).toISOString(), requestId, reservationPayload(petId, hold, expiresAt));
    return reservationAnswer(petId, hold, now, expiresAt);
  };
}

/**
 * A batch as it crosses to the baseline's writer thread: columns (typed arrays and one string
 * array), which structured cloning copies far faster than an object per change, as the service's
 * writer protocol does.
 */
export interface BareBatchMessage {
  petIds: Float64Array;
  /** The quantity a PATCH sets, the delta an adjustment adds, or what a reservation holds, as `kinds` says. */
  values: Float64Array;
  kinds: Uint8Array;
  /** A reservation's: how long it holds, in seconds (0 for the others). */
  ttls: Float64Array;
  requestIds: string[];
  /** A reservation's id ('' for the others). */
  reservationIds: string[];
}

/** A change's kind in BareBatchMessage. */
const PATCH = 0;
const ADJUSTMENT = 1;
const RESERVATION = 2;

export function encodeBareBatch(changes: readonly BareChange[]): BareBatchMessage {
  const n = changes.length;
  const message: BareBatchMessage = {
    petIds: new Float64Array(n),
    values: new Float64Array(n),
    kinds: new Uint8Array(n),
    ttls: new Float64Array(n),
    requestIds: [],
    reservationIds: [],
  };
  for (let i = 0; i < n; i++) {
    const c = changes[i]!;
    message.petIds[i] = c.petId;
    message.values[i] = c.hold?.quantity ?? c.delta ?? c.quantity!;
    message.kinds[i] = c.hold ? RESERVATION : c.delta === undefined ? PATCH : ADJUSTMENT;
    message.ttls[i] = c.hold?.ttlSeconds ?? 0;
    message.requestIds.push(c.requestId);
    message.reservationIds.push(c.hold?.id ?? '');
  }
  return message;
}

export function decodeBareBatch(m: BareBatchMessage): BareChange[] {
  const changes: BareChange[] = [];
  for (let i = 0; i < m.petIds.length; i++) {
    const petId = m.petIds[i]!;
    const value = m.values[i]!;
    const requestId = m.requestIds[i]!;
    const kind = m.kinds[i];
    if (kind === RESERVATION) changes.push({ petId, hold: { id: m.reservationIds[i]!, quantity: value, ttlSeconds: m.ttls[i]! }, requestId });
    else changes.push(kind === ADJUSTMENT ? { petId, delta: value, requestId } : { petId, quantity: value, requestId });
  }
  return changes;
}

/** The writer thread's answer to a batch: its results, or why its transaction failed. */
export type BareReply = { results: BareResult[] } | { failed: string };
