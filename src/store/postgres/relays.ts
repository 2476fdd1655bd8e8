import type { Relays } from '../store.js';
import type { Pooled, Statement } from './connection.js';

const STATEMENTS = {
  // On the server's clock. A relay never seen starts at 0. A second holder's upsert waits for the
  // first's row lock, then checks the row as the first left it: it finds the lease live and takes
  // nothing (no row comes back), so two holders never both hold a relay.
  lease: {
    name: 'relay-lease',
    text: `INSERT INTO relays AS r (name, position, lease_holder, lease_until)
           VALUES ($1, 0, $2, now() + $3::double precision * interval '1 millisecond')
           ON CONFLICT (name) DO UPDATE SET lease_holder = excluded.lease_holder, lease_until = excluded.lease_until
             WHERE r.lease_holder = $2 OR r.lease_holder IS NULL OR r.lease_until < now()
           RETURNING position`,
  },
  // The fence and the write in one statement: a takeover either commits first (no row matches) or waits for it.
  position: {
    name: 'relay-position',
    text: 'UPDATE relays SET position = GREATEST(position, $3) WHERE name = $1 AND lease_holder = $2 AND lease_until > now()',
  },
  release: { name: 'relay-release', text: 'UPDATE relays SET lease_holder = NULL, lease_until = NULL WHERE name = $1 AND lease_holder = $2' },
} as const satisfies Record<string, Statement>;

/** The PostgreSQL store's relays: one statement per call, leases as rows with an expiry, so it works behind a transaction-mode pooler. */
export function relays({ query }: Pooled): Relays {
  return {
    async lease(name, holder, leaseMs) {
      const row = (await query<{ position: bigint }>(STATEMENTS.lease, [name, holder, leaseMs])).rows[0];
      return row && Number(row.position);
    },
    recordPosition: async (name, holder, seq) => (await query(STATEMENTS.position, [name, holder, seq])).rowCount === 1,
    release: async (name, holder) => void (await query(STATEMENTS.release, [name, holder])),
  };
}
