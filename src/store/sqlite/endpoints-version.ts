import type Database from 'better-sqlite3';
import { perConnection } from './connection.js';

/**
 * The endpoints version (webhook_state): every write that changes what a dispatcher must act on
 * (an endpoint added, removed, disabled, enabled, replayed, its secret rotated) goes through
 * `changingEndpoints`, which bumps it in the write's own transaction, so no such write can commit
 * without every instance seeing the version move at its next read (WebhookDeliveries.endpointsVersion).
 */
const statements = perConnection((db) => ({
  bump: db.prepare('UPDATE webhook_state SET endpoints_version = endpoints_version + 1 WHERE id = 1'),
  read: db.prepare<[], { v: number }>('SELECT endpoints_version AS v FROM webhook_state WHERE id = 1'),
}));

/**
 * `change` as one IMMEDIATE transaction on `db` that also bumps the endpoints version when
 * `changed` says its result changed an endpoint (a write that matched no row moves nothing).
 */
export function changingEndpoints<A extends unknown[], R>(
  db: Database.Database,
  change: (...args: A) => R,
  changed: (result: R) => boolean,
): (...args: A) => R {
  const transaction = db.transaction((...args: A) => {
    const result = change(...args);
    if (changed(result)) statements(db).bump.run();
    return result;
  });
  return (...args) => transaction.immediate(...args);
}

/** Bumps the version within a transaction the caller runs (a worker's flush that disables its endpoint). */
export function bumpEndpointsVersion(db: Database.Database): void {
  statements(db).bump.run();
}

/** The endpoints version now. */
export function readEndpointsVersion(db: Database.Database): number {
  return statements(db).read.get()!.v;
}
