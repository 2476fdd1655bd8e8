/**
 * What the durable SQLite baseline writes, whichever thread commits it (bare-durable-sqlite.ts): its
 * own tables in a database file of its own, and the transaction that applies one batch of changes.
 */
import Database from 'better-sqlite3';
import { rmSync } from 'node:fs';
import type { InventoryItem } from '../src/schemas/inventory.js';
import type { BareChange, BareResult, BareWrites } from './bare-durable.js';

/** A connection to the baseline's file, as durable as the service's: WAL, synchronous=FULL (a per-connection setting). */
export function bareConnection(filename: string): Database.Database {
  const db = new Database(filename);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  return db;
}

/**
 * A fresh file with the baseline's tables (one row per pet with its version, its history, its
 * events), seeded with `items`, each at version 1 as the service seeds its entries.
 */
export function createBareDatabase(filename: string, items: readonly InventoryItem[]): Database.Database {
  for (const suffix of ['', '-wal', '-shm']) rmSync(filename + suffix, { force: true });
  const db = bareConnection(filename);
  db.exec(`
    CREATE TABLE inventory (pet_id INTEGER PRIMARY KEY, quantity INTEGER NOT NULL, status TEXT NOT NULL, version INTEGER NOT NULL DEFAULT 1);
    CREATE TABLE history (id INTEGER PRIMARY KEY, pet_id INTEGER NOT NULL, previous_quantity INTEGER NOT NULL, quantity INTEGER NOT NULL, at TEXT NOT NULL);
    CREATE TABLE events (seq INTEGER PRIMARY KEY, type TEXT NOT NULL, occurred_at TEXT NOT NULL, pet_id INTEGER NOT NULL,
      previous_quantity INTEGER NOT NULL, quantity INTEGER NOT NULL, version INTEGER NOT NULL, request_id TEXT NOT NULL);
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

  /** One change under the transaction's write lock: the row read, the new count judged, then written with the next version. */
  const applyOne = (change: BareChange): BareResult => {
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
 * A batch as it crosses to the baseline's writer thread: columns (typed arrays and one string
 * array), which structured cloning copies far faster than an object per change, as the service's
 * writer protocol does.
 */
export interface BareBatchMessage {
  petIds: Float64Array;
  /** The quantity a PATCH sets, or the delta an adjustment adds where `deltas` is 1. */
  values: Float64Array;
  deltas: Uint8Array;
  requestIds: string[];
}

export function encodeBareBatch(changes: readonly BareChange[]): BareBatchMessage {
  const n = changes.length;
  const message: BareBatchMessage = { petIds: new Float64Array(n), values: new Float64Array(n), deltas: new Uint8Array(n), requestIds: [] };
  for (let i = 0; i < n; i++) {
    const c = changes[i]!;
    message.petIds[i] = c.petId;
    message.values[i] = c.delta ?? c.quantity!;
    message.deltas[i] = c.delta === undefined ? 0 : 1;
    message.requestIds.push(c.requestId);
  }
  return message;
}

export function decodeBareBatch(m: BareBatchMessage): BareChange[] {
  const changes: BareChange[] = [];
  for (let i = 0; i < m.petIds.length; i++) {
    const petId = m.petIds[i]!;
    const requestId = m.requestIds[i]!;
    changes.push(m.deltas[i] === 1 ? { petId, delta: m.values[i]!, requestId } : { petId, quantity: m.values[i]!, requestId });
  }
  return changes;
}

/** The writer thread's answer to a batch: its results, or why its transaction failed. */
export type BareReply = { results: BareResult[] } | { failed: string };
