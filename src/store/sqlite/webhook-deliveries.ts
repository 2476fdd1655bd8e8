import type Database from 'better-sqlite3';
import type { WebhookEndpoint } from '../../domain/webhook.js';
import type { AppendedSignal } from '../appended.js';
import type { WebhookDeliveries } from '../store.js';
import { committed, type Run } from './connection.js';
import { readEndpointsVersion } from './endpoints-version.js';
import { progressWrite } from './record-progress.js';
import { ENDPOINT_COLUMNS, toEndpoint, type EndpointRow } from './webhook-rows.js';
import type { ChangeWriter } from './writer.js';

/**
 * The SQLite store's webhook deliveries. The progress and attempts every endpoint worker flushes
 * several times a second commit in the writer (record-progress.ts), so their fsync never stops the
 * event loop; the leases, taken each round, on the event loop's connection, each one statement
 * under the write lock. Leases run on Date.now(): every process on the file runs on this one machine.
 */
export function webhookDeliveries(
  db: Database.Database,
  run: Run,
  writer: Pick<ChangeWriter, 'recordProgress'>,
  endpointsChanged: AppendedSignal,
): WebhookDeliveries {
  const stmt = {
    // One statement under the write lock: two processes cannot both see a lease free and take it.
    // The right-hand sides read the row as it was: a live lease of this holder is renewed (its
    // claim time kept); any other is a new claim, whose time is always later than the last one's.
    lease: db.prepare<{ holder: string; now: number; until: number }, EndpointRow & { lease_since: number }>(
      `UPDATE webhook_endpoints SET lease_holder = @holder, lease_until = @until,
         lease_since = iif(lease_holder = @holder AND lease_until >= @now, lease_since, max(@now, coalesce(lease_since, 0) + 1))
       WHERE enabled = 1 AND (lease_holder = @holder OR lease_until IS NULL OR lease_until < @now)
       RETURNING ${ENDPOINT_COLUMNS}, lease_since`,
    ),
    release: db.prepare<[string]>('UPDATE webhook_endpoints SET lease_holder = NULL, lease_until = NULL WHERE lease_holder = ?'),
  };

  return {
    leaseEndpoints: async (holder, leaseMs) =>
      run(() => {
        const now = Date.now();
        return stmt.lease
          .all({ holder, now, until: now + leaseMs })
          .map((row) => ({ ...toEndpoint(row), leaseClaimedAt: new Date(row.lease_since) }))
          .sort(oldestFirst);
      }),
    releaseLeases: async (holder) => void run(() => stmt.release.run(holder)),
    async recordProgress(id, holder, progress, claimedAt) {
      const held = await committed(run, () => writer.recordProgress(progressWrite(id, holder, progress, claimedAt)));
      // A disable bumped the endpoints version in the same transaction (record-progress.ts).
      if (held && progress.disable !== undefined) endpointsChanged.emit();
      return held;
    },
    endpointsVersion: async () => run(() => readEndpointsVersion(db)),
    onEndpointsChanged: (listener) => endpointsChanged.on(listener),
  };
}

/** Oldest first, as listEndpoints: RETURNING comes in no particular order. */
function oldestFirst(a: WebhookEndpoint, b: WebhookEndpoint): number {
  return a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}
