/**
 * The durable baseline on SQLite: a bare node:http server whose PATCHes are as durable as the
 * service's and nothing else. better-sqlite3 in WAL mode with synchronous=FULL; the PATCHes (and
 * adjustments) parsed in one turn of the event loop commit in one transaction, so one fsync, and
 * each is answered after that commit. No keys table, no idempotency, no version, no change log:
 * the fair ceiling for a durable write on this machine, as the service's figures are compared to it.
 *
 * Env: DATABASE_URL (the service's seeded database, read once for the pets), PORT, BENCH_KEY (the
 * one key it accepts), BARE_WRITES: what each change writes besides the entry (bare-durable.ts).
 * Its own tables live in a database file of their own beside DATABASE_URL's.
 */
import Database from 'better-sqlite3';
import { rmSync } from 'node:fs';
import { bareWrites, loadItems, serveBare, type BareChange } from './bare-durable.js';
import { requiredEnv } from './env.js';

const databaseUrl = requiredEnv('DATABASE_URL');
const writes = bareWrites();
const items = await loadItems(databaseUrl);

const filename = `${databaseUrl.replace(/^sqlite:/, '')}.bare`;
for (const suffix of ['', '-wal', '-shm']) rmSync(filename + suffix, { force: true });
const db = new Database(filename);
db.pragma('journal_mode = WAL');
db.pragma('synchronous = FULL');
db.exec(`
  CREATE TABLE inventory (pet_id INTEGER PRIMARY KEY, quantity INTEGER NOT NULL, status TEXT NOT NULL);
  CREATE TABLE history (id INTEGER PRIMARY KEY, pet_id INTEGER NOT NULL, previous_quantity INTEGER NOT NULL, quantity INTEGER NOT NULL, at TEXT NOT NULL);
  CREATE TABLE events (seq INTEGER PRIMARY KEY, type TEXT NOT NULL, occurred_at TEXT NOT NULL, pet_id INTEGER NOT NULL,
    previous_quantity INTEGER NOT NULL, quantity INTEGER NOT NULL, request_id TEXT NOT NULL);
`);
const seed = db.prepare('INSERT INTO inventory (pet_id, quantity, status) VALUES (?, ?, ?)');
db.transaction(() => {
  for (const item of items) seed.run(item.petId, item.quantity, item.status);
})();

const read = db.prepare('SELECT quantity, status FROM inventory WHERE pet_id = ?').raw(true);
const update = db.prepare('UPDATE inventory SET quantity = ? WHERE pet_id = ?');
const history = db.prepare('INSERT INTO history (pet_id, previous_quantity, quantity, at) VALUES (?, ?, ?, ?)');
const event = db.prepare('INSERT INTO events (type, occurred_at, pet_id, previous_quantity, quantity, request_id) VALUES (?, ?, ?, ?, ?, ?)');

/** One change under the transaction's write lock: the row read, the new count judged, then written. */
function applyOne(change: BareChange): string | number {
  const row = read.get(change.petId) as [number, string] | undefined;
  if (row === undefined) return 404;
  const [previous, status] = row;
  const quantity = change.delta === undefined ? change.quantity! : previous + change.delta;
  if (quantity < 0) return 409;
  update.run(quantity, change.petId);
  const at = new Date().toISOString();
  if (writes !== 'entry') history.run(change.petId, previous, quantity, at);
  if (writes === 'events') event.run('inventory.updated', at, change.petId, previous, quantity, change.requestId);
  return `{"petId":${change.petId},"quantity":${quantity},"status":"${status}"}`;
}

const commit = db.transaction((changes: BareChange[]) => changes.map(applyOne));

serveBare({
  items,
  // Synchronous: the event loop waits for the fsync, and the requests that arrive meanwhile form the next batch.
  commit: async (changes) => commit.immediate(changes),
  close: () => void db.close(),
});
