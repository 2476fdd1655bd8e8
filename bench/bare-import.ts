import { readFile } from 'node:fs/promises';
import { finished } from 'node:stream/promises';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { IMPORT_BATCH } from '../src/cli/import/batches.js';
import { Connection } from '../src/store/sqlite/connection.js';
import { openStore, parseDatabaseUrl } from '../src/store/open.js';
import type { Backend } from './databases.js';

/**
 * What a bare load writes: the service's own inventory table (its columns, checks and indexes); that
 * and each entry's creation event in the service's event table, the rows `pets import` writes for a
 * new pet (a creation has no history row: history records changes of a count); or the least table
 * that holds the rows.
 */
export type BareTable = 'inventory' | 'inventory+events' | 'minimal';

type Row = [petId: bigint, quantity: number, status: string];

/** The columns of a creation event, in the order both backends' bare loads give them. */
const EVENT_COLUMNS = 'seq, type, occurred_at, pet_id, status, previous_quantity, quantity, version, reason, source, key_id, request_id';

/** What one bare load took: rows per second, its wall time and the bench process's CPU time over it (user + system, every thread). */
export interface BareLoad {
  rate: number;
  seconds: number;
  cpuSeconds: number;
}

/** The rows of an exported CSV file, read plainly (not timed: the bare load is the database's work alone). */
export async function readRows(file: string): Promise<Row[]> {
  const lines = (await readFile(file, 'utf8')).split('\n').slice(1, -1);
  return lines.map((line) => {
    const [petId, quantity, status] = line.split(',') as [string, string, string];
    return [BigInt(petId), Number(quantity), status];
  });
}

/**
 * The bare load of `rows` into a fresh database, timed: on SQLite prepared inserts,
 * one transaction per IMPORT_BATCH rows (WAL, synchronous=FULL, as the service's connections); on
 * PostgreSQL one COPY per table and IMPORT_BATCH rows. Into the service's tables (the store opened
 * once for its migrations), or a minimal table of the three columns and the primary key.
 */
export async function bareLoad(backend: Backend, databaseUrl: string, rows: readonly Row[], table: BareTable): Promise<BareLoad> {
  await (await openStore(databaseUrl)).close();
  return backend === 'sqlite' ? bareSqlite(databaseUrl, rows, table) : barePostgres(databaseUrl, rows, table);
}

function bareSqlite(databaseUrl: string, rows: readonly Row[], table: BareTable): BareLoad {
  const target = parseDatabaseUrl(databaseUrl);
  if (target.backend !== 'sqlite') throw new Error('a SQLite URL is needed');
  const db = new Connection(target.filename);
  try {
    db.exec('PRAGMA journal_mode = WAL');
    db.exec('PRAGMA synchronous = FULL');
    db.exec('PRAGMA wal_autocheckpoint = 4000');
    const at = new Date().toISOString();
    let insert: (row: Row) => void;
    if (table === 'minimal') {
      db.exec('CREATE TABLE bare (pet_id INTEGER PRIMARY KEY, quantity INTEGER NOT NULL, status TEXT NOT NULL) STRICT');
      const statement = db.prepare('INSERT INTO bare (pet_id, quantity, status) VALUES (?, ?, ?)');
      insert = (r) => statement.run(r[0], r[1], r[2]);
    } else {
      const statement = db.prepare('INSERT INTO inventory (pet_id, quantity, status, created_at, updated_at) VALUES (?, ?, ?, ?, ?)');
      insert = (r) => statement.run(r[0], r[1], r[2], at, at);
      if (table === 'inventory+events') {
        const event = db.prepare(
          `INSERT INTO inventory_events (${EVENT_COLUMNS})
           VALUES (?, 'inventory.created', ?, ?, ?, NULL, ?, 1, NULL, 'cli', NULL, NULL)`,
        );
        let seq = 0;
        insert = (r) => {
          statement.run(r[0], r[1], r[2], at, at);
          event.run(++seq, at, r[0], r[2], r[1]);
        };
      }
    }
    const batch = db.transaction((part: readonly Row[]) => part.forEach(insert));
    const started = startClock();
    for (let i = 0; i < rows.length; i += IMPORT_BATCH) batch(rows.slice(i, i + IMPORT_BATCH));
    return stopClock(started, rows.length);
  } finally {
    db.close();
  }
}

async function barePostgres(databaseUrl: string, rows: readonly Row[], table: BareTable): Promise<BareLoad> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    if (table === 'minimal') await client.query('CREATE TABLE bare (pet_id bigint PRIMARY KEY, quantity integer NOT NULL, status text NOT NULL)');
    const columns = table === 'minimal' ? 'bare (pet_id, quantity, status)' : 'inventory (pet_id, quantity, status, created_at, updated_at)';
    const at = new Date().toISOString();
    const tail = table === 'minimal' ? '' : `\t${at}\t${at}`;
    // The text of each COPY made first: only the database's part is timed. One batch is one COPY per table.
    const batches: { into: string; text: string }[][] = [];
    for (let i = 0; i < rows.length; i += IMPORT_BATCH) {
      const part = rows.slice(i, i + IMPORT_BATCH);
      const batch = [{ into: columns, text: part.map((r) => `${r[0]}\t${r[1]}\t${r[2]}${tail}\n`).join('') }];
      if (table === 'inventory+events') {
        const eventRow = (r: Row, seq: number) => `${seq}\tinventory.created\t${at}\t${r[0]}\t${r[2]}\t\\N\t${r[1]}\t1\t\\N\tcli\t\\N\t\\N\n`;
        batch.push({ into: `inventory_events (${EVENT_COLUMNS})`, text: part.map((r, k) => eventRow(r, i + k + 1)).join('') });
      }
      batches.push(batch);
    }
    const started = startClock();
    for (const batch of batches) {
      // An entry and its event commit together, as the import writes them.
      if (batch.length > 1) await client.query('BEGIN');
      for (const { into, text } of batch) {
        const copy = client.query(copyFrom(`COPY ${into} FROM STDIN`));
        copy.end(text);
        await finished(copy);
      }
      if (batch.length > 1) await client.query('COMMIT');
    }
    return stopClock(started, rows.length);
  } finally {
    await client.end();
  }
}

function startClock(): { wall: number; cpu: NodeJS.CpuUsage } {
  return { wall: performance.now(), cpu: process.cpuUsage() };
}

/** The load's figures since startClock: the bench process's CPU is every thread's (getrusage of the process). */
function stopClock(started: { wall: number; cpu: NodeJS.CpuUsage }, rows: number): BareLoad {
  const seconds = (performance.now() - started.wall) / 1000;
  const { user, system } = process.cpuUsage(started.cpu);
  return { rate: rows / seconds, seconds, cpuSeconds: (user + system) / 1e6 };
}
