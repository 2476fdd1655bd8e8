import type Database from 'better-sqlite3';
import { encodeRetrying, encodeSeqs } from '../../domain/webhook-position.js';
import type { DeliveryAttempt, DeliveryProgress } from '../../domain/webhook.js';
import { bumpEndpointsVersion } from './endpoints-version.js';

/** A webhook_deliveries row as the store writes and reads it. */
export interface DeliveryRow {
  endpoint_id: string;
  event_id: string;
  seq: number;
  attempted_at: string;
  status: number | null;
  error: string | null;
  duration_ms: number;
  response_body: string | null;
}

export const DELIVERY_COLUMNS = 'endpoint_id, event_id, seq, attempted_at, status, error, duration_ms, response_body';

/**
 * An endpoint's progress as its transaction binds it: plain strings and numbers, so it crosses to
 * the writer thread as it is. The time the lease is checked against is not in it: the transaction
 * reads the clock when it runs, however long the write waited for its turn.
 */
export interface ProgressWrite {
  /** The endpoint's row as the fenced UPDATE binds it. */
  row: ProgressRow;
  /** The attempts, each with the endpoint's id. */
  attempts: DeliveryRow[];
}

interface ProgressRow {
  id: string;
  holder: string;
  since: number | null;
  delivered_seq: number;
  delivered_above: string;
  retrying: string;
  failures: number;
  next_attempt_at: string | null;
  last_failure_at: string | null;
  last_failure: string | null;
  disable: string | null;
}

/** What recordProgress writes for WebhookDeliveries.recordProgress's arguments. */
export function progressWrite(id: string, holder: string, p: DeliveryProgress, claimedAt: Date | undefined): ProgressWrite {
  return {
    row: {
      id,
      holder,
      since: claimedAt?.getTime() ?? null,
      delivered_seq: p.deliveredSeq,
      delivered_above: encodeSeqs(p.deliveredAbove),
      retrying: encodeRetrying(p.retrying),
      failures: p.failures,
      next_attempt_at: p.nextAttemptAt?.toISOString() ?? null,
      last_failure_at: p.lastFailureAt?.toISOString() ?? null,
      last_failure: p.lastFailure,
      disable: p.disable ?? null,
    },
    attempts: p.attempts.map((a) => deliveryRow(a, id)),
  };
}

/** An attempt as its delivery-log row binds it, under `endpointId` (its own by default). */
export function deliveryRow(a: DeliveryAttempt, endpointId = a.endpointId): DeliveryRow {
  return {
    endpoint_id: endpointId,
    event_id: a.eventId,
    seq: a.seq,
    attempted_at: a.attemptedAt.toISOString(),
    status: a.status,
    error: a.error,
    // A STRICT INTEGER column: the timer's fraction of a millisecond is not kept.
    duration_ms: Math.round(a.durationMs),
    response_body: a.responseBody,
  };
}

/**
 * Records an endpoint's progress and its attempts together in one IMMEDIATE transaction, the
 * progress only while `holder`'s lease is live, the endpoint enabled and (with a claim time) the
 * claim the same: the fence and the write under one write lock. When the fence refuses (false),
 * the attempts are still logged, unless the endpoint is gone: they were sent (decisions 10.10).
 */
export function recordProgress(db: Database.Database, write: ProgressWrite): boolean {
  return writesOn(db).progress.immediate(write);
}

/** Logs attempts that move no endpoint (a test delivery), in one IMMEDIATE transaction. */
export function recordAttempts(db: Database.Database, attempts: readonly DeliveryRow[]): void {
  writesOn(db).attempts.immediate(attempts);
}

interface Writes {
  progress: Database.Transaction<(write: ProgressWrite) => boolean>;
  attempts: Database.Transaction<(attempts: readonly DeliveryRow[]) => void>;
}

/** Made at a connection's first write, then reused: the event loop's for a ':memory:' store, the writer thread's otherwise. */
const writes = new WeakMap<Database.Database, Writes>();

function writesOn(db: Database.Database): Writes {
  let made = writes.get(db);
  if (!made) writes.set(db, (made = writesFor(db)));
  return made;
}

function writesFor(db: Database.Database): Writes {
  // Only while the holder's lease is live and the endpoint enabled; disabling gives the lease up.
  const progress = db.prepare<ProgressRow & { now: number }>(
    `UPDATE webhook_endpoints SET delivered_seq = @delivered_seq, delivered_above = @delivered_above, retrying = @retrying, failures = @failures, next_attempt_at = @next_attempt_at,
       last_failure_at = @last_failure_at, last_failure = @last_failure,
       enabled = @disable IS NULL, disabled_reason = @disable,
       lease_holder = iif(@disable IS NULL, lease_holder, NULL), lease_until = iif(@disable IS NULL, lease_until, NULL)
     WHERE id = @id AND lease_holder = @holder AND lease_until > @now AND enabled = 1 AND (@since IS NULL OR lease_since = @since)`,
  );
  const insertAttempt = db.prepare<[DeliveryRow]>(
    `INSERT INTO webhook_deliveries (${DELIVERY_COLUMNS})
     SELECT @endpoint_id, @event_id, @seq, @attempted_at, @status, @error, @duration_ms, @response_body
     WHERE EXISTS (SELECT 1 FROM webhook_endpoints WHERE id = @endpoint_id)`,
  );
  // Attempts outside the fence (a test delivery's, or a refused flush's): one to an endpoint removed meanwhile is
  // dropped with its log, not refused by the foreign key.
  const logAttempts = (attempts: readonly DeliveryRow[]) => {
    for (const attempt of attempts) insertAttempt.run(attempt);
  };
  // Under the fenced UPDATE the endpoint's row exists, in this transaction: its attempts need no such check each.
  const insertFenced = fencedInserts(db);
  return {
    progress: db.transaction((write: ProgressWrite) => {
      // Leases run on Date.now(): every process and thread on the file runs on this one machine.
      if (progress.run({ ...write.row, now: Date.now() }).changes === 0) {
        logAttempts(write.attempts);
        return false;
      }
      // A worker's own disable (410, the schedule used up) is a change of the endpoints every dispatcher acts on.
      if (write.row.disable !== null) bumpEndpointsVersion(db);
      insertFenced(write.attempts);
      return true;
    }),
    attempts: db.transaction(logAttempts),
  };
}

/** Rows a statement of the fenced insert takes at most. */
const ROWS_A_STATEMENT = 50;

/**
 * Inserts rows ROWS_A_STATEMENT at a time, with positional parameters: per row, a statement of
 * its own with named ones cost 2.8 µs of the writer thread, one of fifty rows 1.5 (measured on
 * this table, its two indexes and its foreign key, 250 rows a transaction).
 */
function fencedInserts(db: Database.Database): (rows: readonly DeliveryRow[]) => void {
  const values = (count: number) => Array<string>(count).fill('(?, ?, ?, ?, ?, ?, ?, ?)').join(', ');
  const many = db.prepare<unknown[]>(`INSERT INTO webhook_deliveries (${DELIVERY_COLUMNS}) VALUES ${values(ROWS_A_STATEMENT)}`);
  const one = db.prepare<unknown[]>(`INSERT INTO webhook_deliveries (${DELIVERY_COLUMNS}) VALUES ${values(1)}`);
  const bind = (into: unknown[], r: DeliveryRow) => into.push(r.endpoint_id, r.event_id, r.seq, r.attempted_at, r.status, r.error, r.duration_ms, r.response_body);
  return (rows) => {
    let at = 0;
    for (; at + ROWS_A_STATEMENT <= rows.length; at += ROWS_A_STATEMENT) {
      const params: unknown[] = [];
      for (let i = at; i < at + ROWS_A_STATEMENT; i++) bind(params, rows[i]!);
      many.run(params);
    }
    for (; at < rows.length; at++) {
      const params: unknown[] = [];
      bind(params, rows[at]!);
      one.run(params);
    }
  };
}
