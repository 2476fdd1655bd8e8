import type { ApiKeyRecord } from '../domain/api-key.js';
import type { EventType, InventoryEvent } from '../domain/event.js';
import type { HistoryEntry } from '../domain/history.js';
import type { ImportOutcome, ImportPlan, ImportSource } from '../domain/import.js';
import type { ChangeBatch, ChangeBatchResult, ChangeOrigin, ChangeResult, InventoryEntry, QuantityChange, RetireOutcome } from '../domain/inventory.js';
import type { InventoryItem } from '../schemas/inventory.js';
import type { DeliveryAttempt, DeliveryProgress, NewWebhookEndpoint, WebhookEndpoint } from '../domain/webhook.js';
import type { EndOutcome, ListedReservation, NewReservation, Reservation, ReservationEnd, ReservationQuery, ReservationResult } from '../domain/reservation.js';

/**
 * A store is a few narrow ports, each implemented by every backend (src/store/<backend>/, one
 * file per port, the same names in each) and held to one contract suite over all of them
 * (test/store/). A caller asks for the port it needs, or a Pick of it, never the whole store. A new
 * capability of the store (the event log, webhook deliveries) is a port of its own here.
 *
 * A resolved write is durable: it survives the process being killed the next instant, and by
 * default a power loss. Failures to reach the store reject with StoreUnavailableError (503).
 */
export interface Store {
  /** Backend name, for logs, metrics and readiness. */
  readonly backend: 'sqlite' | 'postgres';
  /** Reading the entries, and what changed in them since a store version. */
  readonly entries: Entries;
  /** Writing the entries: changes of quantity, creations, retirements, imports. */
  readonly changes: Changes;
  /** The API key records. */
  readonly keys: ApiKeys;
  /** The change history of each entry. */
  readonly history: History;
  /** The ordered log of every committed change of an entry's quantity or status. */
  readonly events: Events;
  /** The webhook endpoints as operators manage them, and the log of attempts to each. */
  readonly webhookEndpoints: WebhookEndpoints;
  /** The webhook deliveries as a dispatcher runs them: leases on endpoints, and the progress made under them. */
  readonly webhookDeliveries: WebhookDeliveries;
  /** Where each relay of the event log to another system stands, and who runs it. */
  readonly relays: Relays;
  /** Stock held for a checkout, then sold, given up or expired. */
  readonly reservations: Reservations;
  /** What operators and timers need: durability, readiness, pruning. */
  readonly maintenance: Maintenance;
  /** Commits the changes already accepted, then releases the store; further calls reject with StoreUnavailableError. */
  close(): Promise<void>;
}

/** Reading the entries. A retired entry (Changes.retireEntry) is no entry to any of these. */
export interface Entries {
  /** Every entry, ordered by petId ascending. */
  listInventory(): Promise<InventoryItem[]>;
  /** At most `limit` entries with a petId above `after` (from the first when undefined), by petId, in one consistent read. */
  listInventoryPage(after: bigint | undefined, limit: number): Promise<InventoryItem[]>;
  /** One entry with its version, or undefined when petId has none. */
  getEntry(petId: bigint): Promise<InventoryEntry | undefined>;
  /** The store version: increases with every committed creation, change or retirement of an entry, in commit order. */
  readVersion(): Promise<number>;
  /** What changed in the entries after store version `after` (-1: everything), and the version the answer is current at. */
  changesSince(after: number): Promise<EntryChanges>;
}

/**
 * Writing the entries. Every write follows the same rules, in one transaction, as the domain
 * table of write kinds (domain/write-kinds.ts) has them:
 * - a change of quantity writes its history row (decisions 5.4; the no-op rule is
 *   domain `writesChange`); creating, retiring or reviving an entry writes none;
 * - every creation, revival, change of quantity that writes a history row, and retirement
 *   appends one event (Events): a change's with the source of its origin (the API's with its key
 *   and request), the others' with source cli; an idempotent replay or a refused change appends none;
 * - the store version is bumped last, so versions commit in order and changesSince never misses a
 *   committed write, from any process or instance;
 * - a change with an idempotency key follows domain/idempotency.ts: replayed, refused, or applied
 *   with its record and outcome (the key only as its SHA-256), within the API key's cap.
 */
export interface Changes {
  /**
   * Sets the quantity of an existing entry, or moves it by a delta from the count it holds (its
   * status never changes), if domain `judgeChange` lets it: If-Match holds, and a delta keeps the
   * count within its bounds. Changes that arrive together share one commit (group-commit.ts);
   * each resolves only once its own is durable.
   */
  applyChange(change: QuantityChange): Promise<ChangeResult>;
  /**
   * Applies a batch all or nothing, in one transaction: each change is judged as applyChange's
   * (domain `judgeChange`, a delta on the count it finds), and the first that cannot apply refuses
   * the whole batch by its index, with nothing written (no history row, no event). Each applied
   * change writes its history row and appends its event (source api, the batch's key and request),
   * as applyChange's. The batch's idempotency key covers the whole: its outcome, applied or
   * refused, is kept and replayed as one. Each petId at most once: a repeated one throws.
   */
  applyBatch(batch: ChangeBatch): Promise<ChangeBatchResult>;
  /** Creates entries, all or nothing; DuplicatePetError if a petId has one. A retired petId is revived: new quantity and status, its version goes on. */
  addItems(items: readonly InventoryItem[]): Promise<void>;
  /** Retires an entry the store no longer stocks, keeping its history; refuses one holding stock (in_stock) unless `force`. */
  retireEntry(petId: bigint, options: { force: boolean; at: Date }): Promise<RetireOutcome>;
  /**
   * Imports entries all or nothing: batches are staged as they arrive (memory holds one), then
   * checked as a whole (a petId twice; an entry that exists, or with `upsert` one whose status
   * differs) and applied in one transaction; each change of quantity an upsert makes writes its
   * history row (reason correction). Applies nothing when anything is refused, by the store or the reader.
   */
  importItems(source: ImportSource, plan: ImportPlan): Promise<ImportOutcome>;
}

/** The API key records (the key itself is never stored, only its SHA-256). */
export interface ApiKeys {
  /** Stores a new key record. */
  insertApiKey(record: ApiKeyRecord): Promise<void>;
  /** Stores the record only while the store holds no key at all, atomically across processes (first run); false when a key exists. */
  insertFirstApiKey(record: ApiKeyRecord): Promise<boolean>;
  /** The key record with this SHA-256 hash, whether usable or not. */
  findApiKeyByHash(keyHash: string): Promise<ApiKeyRecord | undefined>;
  /** Every key record, oldest first. */
  listApiKeys(): Promise<ApiKeyRecord[]>;
  /** Marks a key revoked; false when no key has this id or it was already revoked. */
  revokeApiKey(id: string, at: Date): Promise<boolean>;
  /** Records that a key was used at this time. */
  touchApiKey(id: string, at: Date): Promise<void>;
}

/** The change history of each entry, retired ones included. */
export interface History {
  /**
   * One entry's history, newest first: `limit` rows, older than `before` when given (the id of one
   * of this entry's rows; any other id gives no rows). Undefined when petId never had an entry.
   */
  listHistory(petId: bigint, page: { limit: number; before?: bigint }): Promise<HistoryEntry[] | undefined>;
}

/**
 * The event log: one event per committed change of an entry (see Changes), numbered by `seq` in
 * commit order, so a reader that follows seq never misses one that commits later.
 */
export interface Events {
  /**
   * At most `limit` events with seq above `after`, oldest first, in one consistent read with the
   * head; `pruned` (and no items) when events after `after` were already pruned.
   */
  readEvents(after: number, limit: number): Promise<EventPage>;
  /**
   * How many events of each type have seq above `after`, counting at most `limit` of them, oldest
   * first, with the head, in one consistent read: for a follower that only counts them (the
   * metrics, while no stream is open), which needs neither the events themselves nor `pruned` (a
   * pruned event is not counted).
   */
  countEvents(after: number, limit: number): Promise<EventCount>;
  /** The newest seq committed (0 before the first event). */
  head(): Promise<number>;
  /**
   * Calls `listener` soon after events may have been appended, by this process or, where the
   * backend can tell (PostgreSQL's NOTIFY), by another: a hint to read sooner, never the only way
   * to learn of an event. Returns the function that stops the calls. Closing the store stops
   * every listener; once it is closed, this throws StoreUnavailableError.
   */
  onAppended(listener: () => void): () => void;
  /**
   * Drops events that occurred before `before`, oldest first (by seq), in short transactions,
   * stopping at the first that is not old; a reader after a dropped seq gets `pruned`. Resolves to how many.
   */
  purgeEvents(before: Date): Promise<number>;
}

/** The answer of countEvents. */
export interface EventCount {
  /** The events counted, by type; a type with none is absent. */
  byType: Partial<Record<EventType, number>>;
  /** How many were counted (at most the limit): fewer than the limit means the head was reached. */
  counted: number;
  /** The last seq counted; the `after` asked for when none was. */
  last: number;
  /** The newest seq committed, read with the counts. */
  head: number;
}

/** The answer of readEvents. */
export interface EventPage {
  items: InventoryEvent[];
  /** The newest seq committed, read with the items. */
  head: number;
  /** Events after the given seq were pruned: the reader must reload the list and follow from `head`. */
  pruned: boolean;
}

/**
 * Webhook endpoints as operators manage them, and their delivery log. Each stands at a seq of the
 * event log (deliveredSeq), from which the holder of its lease (WebhookDeliveries) delivers to it;
 * enabling or replaying it ends the current claim of that lease, disabling or removing it the lease
 * itself, so the worker running under it stops at its next flush.
 */
export interface WebhookEndpoints {
  /** Stores a new, enabled endpoint whose deliveredSeq is the log's head, read in the same transaction: it receives every event appended after. */
  addEndpoint(endpoint: NewWebhookEndpoint): Promise<WebhookEndpoint>;
  /** Every endpoint, oldest first. */
  listEndpoints(): Promise<WebhookEndpoint[]>;
  /** One endpoint, or undefined. */
  getEndpoint(id: string): Promise<WebhookEndpoint | undefined>;
  /** Deletes an endpoint and its delivery log; false when none has this id. */
  removeEndpoint(id: string): Promise<boolean>;
  /**
   * Disables an endpoint (keeping its place: deliveredSeq stays), with why; false when none has this id.
   * Releases its lease, so its holder stops at its next flush.
   */
  disableEndpoint(id: string, why: string): Promise<boolean>;
  /**
   * Enables an endpoint: its failures are cleared and the next attempt is at once, from the first
   * event it did not get. Ends the current claim of its lease, not the lease: the worker running
   * under it is refused at its next flush, and its holder claims it anew. False when none has this id.
   */
  enableEndpoint(id: string): Promise<boolean>;
  /**
   * Moves an endpoint back (or on) to just after seq `after`, so every event above it is delivered
   * again (what was delivered above its old place is forgotten); clears its failures and ends the claim of its lease, as enableEndpoint. False when none has this id.
   */
  replayFrom(id: string, after: number): Promise<boolean>;
  /** Sets how many requests may be open to the endpoint at once (its worker takes it at the next lease round). Undefined when none has this id. */
  updateEndpoint(id: string, changes: { maxInFlight: number }): Promise<WebhookEndpoint | undefined>;
  /** Replaces the secret; the one it replaces keeps signing beside it until `previousUntil`. Undefined when none has this id. */
  rotateSecret(id: string, secret: string, previousUntil: Date): Promise<WebhookEndpoint | undefined>;
  /** Appends attempts made outside the order (the CLI's `webhooks test`) to the delivery log; moves nothing. */
  recordAttempts(attempts: DeliveryAttempt[]): Promise<void>;
  /** The newest `limit` attempts to one endpoint, newest first. */
  listDeliveries(id: string, limit: number): Promise<DeliveryAttempt[]>;
}

/**
 * Webhook deliveries. Each enabled endpoint is delivered to by one holder at a time: a lease with
 * an expiry on the store's clock, renewed by its holder, so an instance that dies is replaced once
 * its lease runs out (no session lock: it works behind a transaction-mode pooler). A holder's
 * progress is recorded only while it still holds the lease.
 */
export interface WebhookDeliveries {
  /**
   * Renews the leases `holder` holds and claims enabled endpoints whose lease is free or expired,
   * each until leaseMs from now on the store's clock; resolves to every endpoint `holder` now holds,
   * oldest first. A disabled or removed endpoint is no longer among them. Each lease carries when it
   * was claimed: a renewal keeps that time, a new claim (after a release, or an expiry) moves it on.
   */
  leaseEndpoints(holder: string, leaseMs: number): Promise<LeasedEndpoint[]>;
  /** Gives up every lease `holder` holds (it stops delivering), so another holder may claim them at once. */
  releaseLeases(holder: string): Promise<void>;
  /**
   * Appends the attempts and sets the endpoint's progress (and disables it when `disable` is set),
   * in one transaction, the progress only if `holder` still holds its lease (the claim of
   * `claimedAt`, when given) and it is enabled; false otherwise (another holder took it over, or an
   * operator disabled, enabled, replayed or removed it): the progress is not recorded, the attempts
   * are (they were sent), but those of an endpoint removed.
   */
  recordProgress(id: string, holder: string, progress: DeliveryProgress, claimedAt?: Date): Promise<boolean>;
  /**
   * The endpoints version: moves, in the same transaction, with every change of the endpoints a
   * dispatcher acts on (each WebhookEndpoints write but recordAttempts, and a recordProgress that
   * disables), from any process or instance. A cheap read, polled: when it moved, the holder
   * reloads its endpoints at once rather than at its next lease round.
   */
  endpointsVersion(): Promise<number>;
  /**
   * Calls `listener` soon after the endpoints version may have moved, by this process or, where the
   * backend can tell (PostgreSQL's NOTIFY), by another: a hint to read the version sooner, never the
   * only way to learn of a change. Returns the function that stops the calls.
   */
  onEndpointsChanged(listener: () => void): () => void;
}

/**
 * Relays of the event log to another system (a NATS JetStream stream), each by name: the seq it
 * has published up to, and one holder at a time by a lease with an expiry on the store's clock
 * (the same kind as WebhookDeliveries'), so an instance that dies is replaced once its lease runs out. A
 * relay never recorded stands at 0: it publishes every event still in the log.
 */
export interface Relays {
  /**
   * Claims `name` for `holder` (or renews its lease) until leaseMs from now, when it is free,
   * expired or already `holder`'s; resolves to the seq published so far, or undefined when another
   * holder's lease is live.
   */
  lease(name: string, holder: string, leaseMs: number): Promise<number | undefined>;
  /** Moves the relay on to `seq` (never back) while `holder`'s lease is live; false, recording nothing, when it is not. */
  recordPosition(name: string, holder: string, seq: number): Promise<boolean>;
  /** Gives up `holder`'s lease on `name`, so another holder may claim it at once; the position stays. */
  release(name: string, holder: string): Promise<void>;
}

/**
 * Reservations (decisions 12): stock held for a checkout. Each entry keeps what active
 * reservations hold of it (`reserved`), moved in the transaction of every change of a
 * reservation's status, which appends its event (naming every pet it holds) through the change log
 * and bumps the store version naming those pets. An active reservation past its expiry holds
 * nothing from that instant: every read leaves it out before the sweep marks it.
 */
export interface Reservations {
  /**
   * Holds every item or none, in one transaction, each from the entry's available stock (quantity
   * - reserved), for ttlSeconds from the store's clock; refused by the first item with no entry or
   * too little available. An Idempotency-Key is kept and replayed as a change's (domain/idempotency.ts).
   */
  create(reservation: NewReservation): Promise<ReservationResult>;
  /** One reservation, or undefined; an active one past its expiry reads as expired. */
  get(id: string): Promise<Reservation | undefined>;
  /** A page of reservations, newest first, by live status and pet. */
  list(query: ReservationQuery): Promise<ListedReservation[]>;
  /**
   * Commits (each item's count goes down by what it held, floored at 0, with a history row reason
   * sold and an inventory.updated event per pet, then the reservation's event) or releases an active
   * reservation, in one transaction; the same end again is `already`, any other final status `not_active`.
   */
  end(id: string, end: ReservationEnd, origin: ChangeOrigin): Promise<EndOutcome>;
  /** Marks expired every active reservation past its expiry, each exactly once across processes and instances, with its event; resolves to those this call marked. */
  expireDue(): Promise<Reservation[]>;
  /** How many reservations are active and how many units they hold, expired ones left out. */
  held(): Promise<{ active: number; units: number }>;
}

/** An endpoint as a lease holds it: with the time the lease was claimed, which a renewal keeps. */
export type LeasedEndpoint = WebhookEndpoint & { leaseClaimedAt: Date };

/** Durability, readiness and pruning. Pruning deletes in short transactions, so requests' writes interleave with it. */
export interface Maintenance {
  /** The settings that make a write durable, for each connection that writes (the server logs them at start). */
  durability(): Promise<ConnectionDurability[]>;
  /** Resolves when the store answers a trivial query and can commit. */
  ping(): Promise<void>;
  /** Drops idempotency records that expired before `now`; resolves to how many. */
  purgeIdempotencyRecords(now: Date): Promise<number>;
  /**
   * Drops history rows older than `before`, oldest first, except each entry's newest row (the last
   * change of its count stays visible); stops at the first row that is not old, so a pruned page
   * cursor has no older rows left. Resolves to how many.
   */
  purgeHistory(before: Date): Promise<number>;
  /** Drops webhook delivery attempts made before `before`, in short transactions; resolves to how many. */
  purgeDeliveries(before: Date): Promise<number>;
}

/** The answer of changesSince. */
export interface EntryChanges {
  /** The store version the answer is current at. */
  version: number;
  /** Entries created, changed or revived since, by petId; every entry when `complete`. */
  items: InventoryItem[];
  /** Entries retired since, by petId; empty when `complete`. */
  removed: bigint[];
  /** `items` is the whole list (asked from -1, or the store cannot tell what changed): the reader replaces what it holds. */
  complete: boolean;
  /**
   * Which holds past their expiry, not yet marked by the sweep, this read left out (decisions 12.4):
   * absent for none, else a token that differs whenever that set does at one version (the latest
   * expiry among them); their pets are among `items`. A cached list is current only at the same version and token.
   */
  lapsed?: string;
  /** The event log's head in the same read: the list at `version` holds every event up to it and none after (X-Events-Head). */
  eventsHead: number;
}

/**
 * Past this many entries in one write, a store tells the readers of changesSince to read the whole
 * list again rather than naming each entry: past it, one full read costs them less than lookups.
 */
export const BULK_WRITE = 10_000;

/** One writing connection (or pool) and its durability settings as the database reports them, e.g. { synchronous: 'full' }. */
export interface ConnectionDurability {
  connection: string;
  settings: Record<string, string>;
}

/** addItems was given a petId that already has an entry. */
export class DuplicatePetError extends Error {
  constructor(readonly petId: bigint) {
    super(`pet ${petId} already has an inventory entry`);
    this.name = 'DuplicatePetError';
  }
}

/** A port of the store, by name: what a caller asks for. */
export type PortName = Exclude<keyof Store, 'backend' | 'close'>;

/** Every port; the type makes a port added to Store a compile error here until it is listed. */
const EVERY_PORT: Record<PortName, true> = {
  entries: true,
  changes: true,
  keys: true,
  history: true,
  events: true,
  webhookEndpoints: true,
  webhookDeliveries: true,
  relays: true,
  reservations: true,
  maintenance: true,
};

/** The name of every port of a store. */
export const PORT_NAMES = Object.keys(EVERY_PORT) as readonly PortName[];
