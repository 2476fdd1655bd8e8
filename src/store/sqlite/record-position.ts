import type Database from 'better-sqlite3';

/** A relay's new position as its fenced UPDATE binds it: plain strings and numbers, so it crosses to the writer thread as it is. */
export interface PositionWrite {
  name: string;
  holder: string;
  seq: number;
}

/** Made at a connection's first write, then reused: the event loop's for a ':memory:' store, the writer thread's otherwise. */
const statements = new WeakMap<Database.Database, Database.Statement<PositionWrite & { now: number }>>();

/**
 * Moves a relay on to `seq` (never back: a write that waited behind a later one changes nothing)
 * only while `holder`'s lease is live: the fence and the write in one statement, under the write
 * lock. False, writing nothing, when the fence refuses. The time the lease is checked against is
 * read when the statement runs, however long the write waited for its turn.
 */
export function recordPosition(db: Database.Database, write: PositionWrite): boolean {
  let stmt = statements.get(db);
  if (!stmt) {
    stmt = db.prepare<PositionWrite & { now: number }>(
      'UPDATE relays SET position = max(position, @seq) WHERE name = @name AND lease_holder = @holder AND lease_until > @now',
    );
    statements.set(db, stmt);
  }
  // Leases run on Date.now(): every process and thread on the file runs on this one machine.
  return stmt.run({ ...write, now: Date.now() }).changes === 1;
}
