import { escapeIdentifier, type Client } from 'pg';
import type { EventType, InventoryEvent } from '../../domain/event.js';
import { eventOfRow } from '../../domain/reservation-events.js';
import type { AppendedSignal } from '../appended.js';
import { inBatches, oldPrefix, PRUNE_BATCH } from '../pruning.js';
import { eventCountOf, type TypeCount } from '../event-count.js';
import type { Events } from '../store.js';
import { POOLER_REFUSAL, type Pooled, type Statement } from './connection.js';
import { ENDPOINTS_CHANGED } from './endpoints-version.js';

/** Where the writes announce their events: the NOTIFY channel, and this store's own listeners. */
export interface EventLog {
  /** The NOTIFY channel of this store's tables (one per schema). */
  readonly channel: string;
  readonly appended: AppendedSignal;
  /** The listeners of WebhookDeliveries.onEndpointsChanged: the endpoints version moved (a NOTIFY of ENDPOINTS_CHANGED on the same channel). */
  readonly endpointsChanged: AppendedSignal;
}

/** A channel name is an identifier: PostgreSQL keeps at most 63 bytes of it (schema names are ASCII, SCHEMA_NAME). */
const CHANNEL_MAX = 63;

/** The NOTIFY channel of the event log in `schema` (the server's default: none), so stores on other schemas of the database stay apart. */
export function eventChannel(schema: string | undefined): string {
  return (schema === undefined ? 'inventory_events' : `inventory_events.${schema}`).slice(0, CHANNEL_MAX);
}

/** After the listening connection is lost, the next attempt comes this long after. */
export const RELISTEN_DELAY_MS = 1000;

const EVENT_COLUMNS = `e.seq, e.type, e.occurred_at AS "occurredAt", e.pet_id AS "petId", e.status, e.previous_quantity AS "previousQuantity",
  e.quantity, e.version, e.reason, e.source, e.key_id AS "keyId", e.request_id AS "requestId", e.payload`;

const STATEMENTS = {
  // One statement, one snapshot: the head, the pruned mark and the events agree; no events when `after` was pruned.
  read: {
    name: 'events-read',
    text: `SELECT s.events_head AS head, s.events_pruned AS "prunedTo", ${EVENT_COLUMNS}
           FROM store_state s LEFT JOIN LATERAL
             (SELECT * FROM inventory_events WHERE seq > $1::bigint AND $1::bigint >= s.events_pruned ORDER BY seq LIMIT $2) e ON true
           WHERE s.id = 1 ORDER BY e.seq`,
  },
  // One statement, one snapshot: the head, and the next $2 events by seq counted by type (none read out whole).
  count: {
    name: 'events-count',
    text: `SELECT s.events_head AS head, c.type, c.n, c.last
           FROM store_state s LEFT JOIN LATERAL
             (SELECT type, count(*) AS n, max(seq) AS last
              FROM (SELECT seq, type FROM inventory_events WHERE seq > $1::bigint ORDER BY seq LIMIT $2) e GROUP BY type) c ON true
           WHERE s.id = 1`,
  },
  head: { name: 'events-head', text: 'SELECT events_head AS head FROM store_state WHERE id = 1' },
  // The oldest events, by seq, which is commit order: no event below one seen here can still commit.
  oldest: { name: 'events-oldest', text: 'SELECT seq, occurred_at AS at FROM inventory_events WHERE seq > $1 ORDER BY seq LIMIT $2' },
  // The events first, store_state last (as every write takes it): one short transaction per step.
  prune: {
    name: 'events-prune',
    text: `WITH d AS (DELETE FROM inventory_events WHERE seq <= $1 RETURNING 1)
           UPDATE store_state SET events_pruned = greatest(events_pruned, $1) WHERE id = 1 RETURNING (SELECT count(*) FROM d) AS deleted`,
  },
} as const satisfies Record<string, Statement>;

/** The head, with one type's count and last seq, or with nulls when there is none. */
interface CountRow {
  head: bigint;
  type: EventType | null;
  n: bigint | null;
  last: bigint | null;
}

/** The head and the pruned mark, with an event, or with nulls when there is none. */
type ReadRow = { head: bigint; prunedTo: bigint } & { [K in keyof EventRow]: EventRow[K] | null };
interface EventRow {
  seq: bigint;
  type: string;
  occurredAt: Date;
  petId: bigint | null;
  status: string;
  previousQuantity: number | null;
  quantity: number | null;
  version: bigint | null;
  reason: string | null;
  source: string;
  keyId: string | null;
  requestId: string | null;
  payload: string | null;
}

/**
 * The PostgreSQL store's event log. Writes append events with seqs taken in their last update of
 * store_state, held to commit, so seq order is commit and visibility order (CHANGE_BATCH). The
 * writes NOTIFY `log.channel` as they commit; while anyone listens to onAppended, a connection of
 * its own (`listen`, outside the pool) LISTENs, so commits of other instances wake the listeners too.
 */
export function events({ query }: Pooled, log: EventLog): Events {
  return {
    async readEvents(after, limit) {
      const { rows } = await query<ReadRow>(STATEMENTS.read, [after, limit]);
      const first = rows[0]!;
      const head = Number(first.head);
      if (after < Number(first.prunedTo)) return { items: [], head, pruned: true };
      return { items: rows.filter((r) => r.seq !== null).map((r) => toEvent(r as EventRow)), head, pruned: false };
    },
    async countEvents(after, limit) {
      const { rows } = await query<CountRow>(STATEMENTS.count, [after, limit]);
      const shares = rows.flatMap((r): TypeCount[] => (r.type === null ? [] : [[r.type, Number(r.n), Number(r.last)]]));
      return eventCountOf(after, Number(rows[0]!.head), shares);
    },
    head: async () => Number((await query<{ head: bigint }>(STATEMENTS.head)).rows[0]!.head),
    onAppended: (listener) => log.appended.on(listener),
    purgeEvents: (before) =>
      inBatches(0n, async (after) => {
        const head = (await query<{ seq: bigint; at: Date }>(STATEMENTS.oldest, [after.toString(), PRUNE_BATCH])).rows;
        const { last, more } = oldPrefix(
          head.map((r) => [r.seq, r.at] as const),
          (at) => at < before,
        );
        if (last === undefined) return { deleted: 0 };
        const deleted = Number((await query<{ deleted: bigint }>(STATEMENTS.prune, [last.toString()])).rows[0]!.deleted);
        return more ? { deleted, next: last } : { deleted };
      }),
  };
}

function toEvent(r: EventRow): InventoryEvent {
  return eventOfRow({ ...r, seq: Number(r.seq), version: r.version === null ? null : Number(r.version) });
}

/** Who is told of a notification, by its payload: the writes' (events appended), or ENDPOINTS_CHANGED. */
export interface Heard {
  appended(): void;
  endpointsChanged(): void;
}

/**
 * LISTENs on `channel` on a connection of its own while `listened` says so, telling `appended` of
 * every notification (and `endpointsChanged` of the endpoints version's); a lost connection is opened again after RELISTEN_DELAY_MS, and the
 * listeners told once it listens again (what was sent meanwhile was missed); behind a pooler that
 * refuses its connection (openListenClient), it gives up. Only a hint: readers never depend on it.
 */
export function channelListener(connect: () => Client, channel: string, heard: Heard): (listened: boolean) => void {
  const appended = () => heard.appended();
  let wanted = false;
  let pooled = false;
  let client: Client | undefined;
  let retry: NodeJS.Timeout | undefined;
  const drop = (c: Client) => {
    c.removeAllListeners('notification');
    c.on('error', () => {});
    void c.end().catch(() => {});
  };
  const open = (again: boolean) => {
    retry = undefined;
    if (!wanted || client || pooled) return;
    const c = connect();
    client = c;
    const lost = () => {
      if (client !== c) return;
      client = undefined;
      drop(c);
      if (wanted) retry = setTimeout(() => open(true), RELISTEN_DELAY_MS).unref();
    };
    c.on('error', lost);
    c.on('end', lost);
    c.on('notification', (message) => (message.payload === ENDPOINTS_CHANGED ? heard.endpointsChanged() : appended()));
    c.connect()
      .then(() => c.query(`LISTEN ${escapeIdentifier(channel)}`))
      .then(
        () => {
          if (again && client === c) {
            appended();
            heard.endpointsChanged();
          }
        },
        (err: unknown) => {
          // Behind a transaction-mode pooler (no DATABASE_DIRECT_URL): no LISTEN can work, so none is tried again; readers poll.
          if (err instanceof Error && POOLER_REFUSAL.test(err.message)) pooled = true;
          lost();
        },
      );
  };
  return (listened) => {
    wanted = listened;
    if (listened) {
      if (!client && !retry) open(false);
      return;
    }
    clearTimeout(retry);
    retry = undefined;
    const c = client;
    client = undefined;
    if (c) drop(c);
  };
}
