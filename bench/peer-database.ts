import Database from 'better-sqlite3';
import pg from 'pg';
import type { DatabaseTarget } from '../src/store/open.js';

export interface PeerItem {
  petId: number;
  quantity: number;
  status: string;
  reserved: number;
  available: number;
}

/** What the Express peer asks of its database: one query per call, nothing cached. */
export interface PeerDatabase {
  list(): Promise<PeerItem[]>;
  setQuantity(petId: number, quantity: number): Promise<PeerItem | undefined>;
  close(): Promise<void>;
}

/** An entry's columns as the service answers them, what reservations hold and what is left included (one portable expression on both databases). */
const COLUMNS = 'pet_id AS "petId", quantity, status, reserved, CASE WHEN quantity > reserved THEN quantity - reserved ELSE 0 END AS available';
const LIST_SQL = `SELECT ${COLUMNS} FROM inventory ORDER BY pet_id`;
type PeerRow = Omit<PeerItem, 'petId'> & { petId: string };

export async function openPeerDatabase(target: DatabaseTarget): Promise<PeerDatabase> {
  return target.backend === 'sqlite' ? openSqlite(target.filename) : openPostgres(target.url);
}

function openSqlite(filename: string): PeerDatabase {
  const db = new Database(filename);
  // exec(), not pragma(): a dropped better-sqlite3 statement can abort Node 24 when collected (see src/store/sqlite/connection.ts).
  db.exec('PRAGMA journal_mode = WAL');
  db.exec('PRAGMA synchronous = FULL');
  const list = db.prepare(LIST_SQL);
  const update = db.prepare(`UPDATE inventory SET quantity = ?, updated_at = ? WHERE pet_id = ? RETURNING ${COLUMNS}`);
  return {
    list: async () => list.all() as PeerItem[],
    setQuantity: async (petId, quantity) => update.get(quantity, new Date().toISOString(), petId) as PeerItem | undefined,
    close: async () => void db.close(),
  };
}

function openPostgres(url: string): PeerDatabase {
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  pool.on('error', () => {});
  // pg returns BIGINT as a string; the textbook fix is Number() on the way out.
  const toItem = (row: PeerRow): PeerItem => ({ ...row, petId: Number(row.petId) });
  return {
    list: async () => (await pool.query<PeerRow>(LIST_SQL)).rows.map(toItem),
    async setQuantity(petId, quantity) {
      const { rows } = await pool.query<PeerRow>(
        `UPDATE inventory SET quantity = $2, updated_at = now() WHERE pet_id = $1 RETURNING ${COLUMNS}`,
        [petId, quantity],
      );
      return rows[0] && toItem(rows[0]);
    },
    close: () => pool.end(),
  };
}
