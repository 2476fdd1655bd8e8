import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';

/** How long a writer waits for another connection's lock before the request fails with 503. */
export const BUSY_TIMEOUT_MS = 5000;

/** Opens (creating if needed) a connection with the settings every connection of the store uses. */
export function openSqliteConnection(filename: string): Database.Database {
  if (filename !== ':memory:') mkdirSync(dirname(filename), { recursive: true });
  const db = new Database(filename);
  try {
    db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    db.pragma('journal_mode = WAL');
    // FULL: a commit is fsynced before it returns, so an acknowledged change survives a power loss.
    db.pragma('synchronous = FULL');
    db.pragma('foreign_keys = ON');
  } catch (err) {
    db.close();
    throw err;
  }
  return db;
}

const SYNCHRONOUS = ['off', 'normal', 'full', 'extra'];

/** The settings that make this connection's commits durable, as SQLite reports them. */
export function durabilityOf(db: Database.Database): Record<string, string> {
  const synchronous = db.pragma('synchronous', { simple: true }) as number;
  return { journal_mode: String(db.pragma('journal_mode', { simple: true })), synchronous: SYNCHRONOUS[synchronous] ?? String(synchronous) };
}
