import type Database from 'better-sqlite3';
import type { Relays } from '../store.js';
import { committed, type Run } from './connection.js';
import type { ChangeWriter } from './writer.js';

/**
 * The SQLite store's relays. The position, recorded after every page a relay publishes, commits in
 * the writer (record-position.ts), so its fsync never stops the event loop; leases, taken every
 * few seconds, on the event loop's connection. Each write is one statement under the write lock,
 * so two processes cannot both see a lease free and take it.
 */
export function relays(db: Database.Database, run: Run, writer: Pick<ChangeWriter, 'recordPosition'>): Relays {
  const stmt = {
    // A relay never seen starts at 0. The right-hand side is the row as it was: the lease is taken
    // only when it is this holder's, free or expired; otherwise no row comes back.
    lease: db.prepare<{ name: string; holder: string; now: number; until: number }, { position: number }>(
      `INSERT INTO relays (name, position, lease_holder, lease_until) VALUES (@name, 0, @holder, @until)
       ON CONFLICT (name) DO UPDATE SET lease_holder = @holder, lease_until = @until
         WHERE lease_holder = @holder OR lease_holder IS NULL OR lease_until < @now
       RETURNING position`,
    ),
    release: db.prepare<[string, string]>('UPDATE relays SET lease_holder = NULL, lease_until = NULL WHERE name = ? AND lease_holder = ?'),
  };
  return {
    lease: async (name, holder, leaseMs) =>
      run(() => {
        const now = Date.now();
        return stmt.lease.get({ name, holder, now, until: now + leaseMs })?.position;
      }),
    recordPosition: (name, holder, seq) => committed(run, () => writer.recordPosition({ name, holder, seq })),
    release: async (name, holder) => void run(() => stmt.release.run(name, holder)),
  };
}
