import createClient from 'openapi-fetch';
import { errorFromAnswer, eventsHeadOf, unexpectedAnswer } from './errors.js';
import { followEvents, type FollowContext, type FollowOptions } from './events.js';
import type { paths } from './generated/openapi.js';
import { parseJson, stringifyJson } from './json.js';
import { checkPetId } from './pet-id.js';
import { retryingFetch, retryPolicy, type FetchLike, type RetryOptions } from './retry.js';
import type {
  BatchChange,
  BatchItem,
  CallingKey,
  EventPage,
  FollowedEvent,
  HistoryPage,
  InventoryAdjustment,
  InventoryIfChanged,
  InventoryItem,
  InventoryUpdate,
  Reservation,
  ReservationPage,
  ReservationRequest,
  ReservationStatus,
  WebhookList,
} from './types.js';

export interface InventoryClientOptions {
  /** The API's base URL, /v1 included, e.g. http://localhost:8080/v1. */
  baseUrl: string;
  /** An API key: inventory:read for the GETs, inventory:write for the changes (update, adjust, batch) too. */
  apiKey: string;
  /** The fetch to send with (default globalThis.fetch): a proxy agent, a test double. */
  fetch?: FetchLike;
  /** Retries of GETs and of changes with an idempotencyKey (a number: how many; default 3); see README. */
  retries?: number | RetryOptions;
  /** Sent as User-Agent, so the service's logs can tell callers apart. */
  userAgent?: string;
  /** More headers for every request. */
  headers?: Record<string, string>;
}

export interface UpdateOptions {
  /** The ETag of the version read: the update applies only if the entry is still at it (else 412). */
  ifMatch?: string;
  /** A unique key per intended change (a UUID): makes the update safe to retry, and retried. */
  idempotencyKey?: string;
}

export interface BatchOptions {
  /** A unique key per intended batch (a UUID): makes the batch safe to retry, and retried; its outcome, applied or refused, is replayed as one. */
  idempotencyKey?: string;
}

export interface HistoryOptions {
  /** Changes per page, 1 to 500 (service default 100). */
  limit?: number;
  /** nextCursor of the previous page. */
  cursor?: string;
}

export interface EventsOptions {
  /** Events with a seq above this one (default 0: from the oldest kept). */
  after?: number;
  /** Events per page, 1 to 1,000 (service default 100). */
  limit?: number;
}

export interface InventoryClient {
  listInventory(): Promise<InventoryItem[]>;
  /** The list only if it changed since the list `etag` names (If-None-Match): a poll that costs a few bytes while nothing changes. */
  listInventoryIfChanged(etag?: string): Promise<InventoryIfChanged>;
  getInventoryItem(petId: bigint): Promise<{ item: InventoryItem; etag: string }>;
  updateInventory(petId: bigint, update: InventoryUpdate, options?: UpdateOptions): Promise<{ item: InventoryItem; etag: string; replayed: boolean }>;
  /** Moves a count by a non-zero delta from what the entry holds when it commits (a sale: -1); 409 insufficient_stock below 0. */
  adjustInventory(petId: bigint, adjustment: InventoryAdjustment, options?: UpdateOptions): Promise<{ item: InventoryItem; etag: string; replayed: boolean }>;
  /** Applies every change or none (each a quantity or a delta); a refusal is the first failing change's error, with its `index`. */
  batchUpdateInventory(changes: readonly BatchChange[], options?: BatchOptions): Promise<{ items: BatchItem[]; replayed: boolean }>;
  listHistory(petId: bigint, options?: HistoryOptions): Promise<HistoryPage>;
  /** The API key this client calls with: its id, name, scopes and expiry (never the key). */
  getCallingKey(): Promise<CallingKey>;
  /** One page of the change events after a seq, oldest first, and the head (X-Events-Head); 410 events_pruned when that seq is no longer kept, 409 events_beyond_head when it is beyond the newest. */
  listEvents(options?: EventsOptions): Promise<EventPage>;
  /** The change events as they happen (the live stream), reconnecting after a cut with Last-Event-ID; see FollowOptions. */
  followEvents(options?: FollowOptions): AsyncGenerator<FollowedEvent, void, undefined>;
  /** Every webhook endpoint and where its delivery stands (scope webhooks:manage), never a secret. */
  listWebhooks(): Promise<WebhookList>;
  /** Holds every item or none (409 insufficient_stock, 404 not_found with the item's `index`); an Idempotency-Key replays the same reservation. */
  createReservation(request: ReservationRequest, options?: BatchOptions): Promise<{ reservation: Reservation; replayed: boolean }>;
  getReservation(id: string): Promise<Reservation>;
  /** Reservations newest first, by status and pet, a page at a time. */
  listReservations(options?: ReservationListOptions): Promise<ReservationPage>;
  /** The sale: each pet's count goes down by what it held; again: the same answer; 409 reservation_not_active once released or expired. */
  commitReservation(id: string): Promise<Reservation>;
  /** Gives the held stock back; again: the same answer; 409 reservation_not_active once committed or expired. */
  releaseReservation(id: string): Promise<Reservation>;
}

export interface ReservationListOptions {
  status?: ReservationStatus;
  petId?: bigint;
  /** Reservations per page, 1 to 500 (service default 100). */
  limit?: number;
  cursor?: string;
}

/** What openapi-fetch hands back for a call made with parseAs 'text'. */
interface TextAnswer {
  data?: string;
  error?: unknown;
  response: Response;
}

export function createInventoryClient(options: InventoryClientOptions): InventoryClient {
  const policy = retryPolicy(options.retries);
  const headers = { ...options.headers, authorization: `Bearer ${options.apiKey}`, ...(options.userAgent ? { 'user-agent': options.userAgent } : {}) };
  const fetch: FetchLike = options.fetch ?? ((request) => globalThis.fetch(request));
  // The stream reconnects by itself (events.ts): its fetch is the plain one.
  const events: FollowContext = { baseUrl: options.baseUrl, headers, fetch, policy };
  const api = createClient<paths>({
    baseUrl: options.baseUrl,
    fetch: retryingFetch(fetch, policy),
    headers,
    // Bodies may hold bigints: written as digits, never through a float.
    bodySerializer: stringifyJson,
  });

  return {
    async listInventory() {
      // parseAs 'text' everywhere: the text is parsed by parseJson, never by JSON.parse (see json.ts).
      const { body } = await settle<InventoryItem[]>(api.GET('/inventory', { parseAs: 'text' }));
      return body;
    },

    async listInventoryIfChanged(etag) {
      const answer = await api.GET('/inventory', { params: { header: { 'If-None-Match': etag } }, parseAs: 'text' });
      // 304 answers only an If-None-Match: the list is still the one `etag` names (its ETag is the current one, which the service sends).
      if (answer.response.status === 304 && etag !== undefined) return { changed: false, etag: answer.response.headers.get('etag') ?? etag };
      const { body, response } = await settle<InventoryItem[]>(answer);
      return { changed: true, items: body, etag: requiredEtag(response) };
    },

    async getInventoryItem(petId) {
      const { body, response } = await settle<InventoryItem>(api.GET('/inventory/{petId}', { params: { path: { petId: checkPetId(petId) } }, parseAs: 'text' }));
      return { item: body, etag: requiredEtag(response) };
    },

    async updateInventory(petId, update, { ifMatch, idempotencyKey } = {}) {
      const { body, response } = await settle<InventoryItem>(
        api.PATCH('/inventory/{petId}', {
          params: { path: { petId: checkPetId(petId) }, header: { 'If-Match': ifMatch, 'Idempotency-Key': idempotencyKey } },
          body: update,
          parseAs: 'text',
        }),
      );
      return { item: body, etag: requiredEtag(response), replayed: replayedOf(response) };
    },

    async adjustInventory(petId, adjustment, { ifMatch, idempotencyKey } = {}) {
      const { body, response } = await settle<InventoryItem>(
        api.POST('/inventory/{petId}/adjustments', {
          params: { path: { petId: checkPetId(petId) }, header: { 'If-Match': ifMatch, 'Idempotency-Key': idempotencyKey } },
          body: adjustment,
          parseAs: 'text',
        }),
      );
      return { item: body, etag: requiredEtag(response), replayed: replayedOf(response) };
    },

    async batchUpdateInventory(changes, { idempotencyKey } = {}) {
      // Every petId checked before anything is sent: a rounded one would change another pet.
      for (const change of changes) checkPetId(change.petId);
      const { body, response } = await settle<{ items: BatchItem[] }>(
        api.POST('/inventory/batch', { params: { header: { 'Idempotency-Key': idempotencyKey } }, body: { changes: [...changes] }, parseAs: 'text' }),
      );
      return { items: body.items, replayed: replayedOf(response) };
    },

    async listHistory(petId, { limit, cursor } = {}) {
      // The service takes limit as decimal text (it refuses 2.5 rather than truncate it).
      const query = { limit: limit === undefined ? undefined : String(limit), cursor };
      const { body } = await settle<HistoryPage>(api.GET('/inventory/{petId}/history', { params: { path: { petId: checkPetId(petId) }, query }, parseAs: 'text' }));
      return body;
    },

    async getCallingKey() {
      const { body } = await settle<CallingKey>(api.GET('/key', { parseAs: 'text' }));
      return body;
    },

    async listEvents({ after, limit } = {}) {
      // Decimal text, as listHistory's limit: the service refuses 2.5 rather than truncate it.
      const query = { after: after === undefined ? undefined : String(after), limit: limit === undefined ? undefined : String(limit) };
      const { body, response } = await settle<{ items: EventPage['items'] }>(api.GET('/events', { params: { query }, parseAs: 'text' }));
      const head = eventsHeadOf(response);
      if (head === undefined) throw unexpectedAnswer(response, '', 'the answer has no X-Events-Head');
      return { items: body.items, head };
    },

    followEvents(followOptions) {
      return followEvents(events, followOptions);
    },

    async listWebhooks() {
      const { body } = await settle<WebhookList>(api.GET('/webhooks', { parseAs: 'text' }));
      return body;
    },

    async createReservation(request, { idempotencyKey } = {}) {
      for (const item of request.items) checkPetId(item.petId);
      const { body, response } = await settle<Reservation>(
        api.POST('/reservations', { params: { header: { 'Idempotency-Key': idempotencyKey } }, body: request, parseAs: 'text' }),
      );
      return { reservation: body, replayed: replayedOf(response) };
    },

    async getReservation(id) {
      const { body } = await settle<Reservation>(api.GET('/reservations/{id}', { params: { path: { id } }, parseAs: 'text' }));
      return body;
    },

    async listReservations({ status, petId, limit, cursor } = {}) {
      const query = { status, petId: petId === undefined ? undefined : checkPetId(petId).toString(), limit: limit === undefined ? undefined : String(limit), cursor };
      const { body } = await settle<ReservationPage>(api.GET('/reservations', { params: { query }, parseAs: 'text' }));
      return body;
    },

    async commitReservation(id) {
      const { body } = await settle<Reservation>(api.POST('/reservations/{id}/commit', { params: { path: { id } }, parseAs: 'text' }));
      return body;
    },

    async releaseReservation(id) {
      const { body } = await settle<Reservation>(api.POST('/reservations/{id}/release', { params: { path: { id } }, parseAs: 'text' }));
      return body;
    },
  };
}

/** The parsed body of a 2xx answer, or the InventoryApiError for any other. */
async function settle<T>(pending: TextAnswer | Promise<TextAnswer>): Promise<{ body: T; response: Response }> {
  const { data, error, response } = await pending;
  if (!response.ok) throw errorFromAnswer(response, error);
  let body: unknown;
  try {
    body = parseJson(data ?? '');
  } catch {
    throw unexpectedAnswer(response, data ?? '', 'the body is not JSON');
  }
  // Shapes are the contract's (the generated types); only "is it JSON" is checked here.
  return { body: body as T, response };
}

/** The service marks an answer stored for an earlier request with the same Idempotency-Key. */
function replayedOf(response: Response): boolean {
  return response.headers.get('idempotent-replayed') === 'true';
}

/** The ETag every entry and list answer carries; without it a conditional update or read could not follow. */
function requiredEtag(response: Response): string {
  const etag = response.headers.get('etag');
  if (etag === null) throw unexpectedAnswer(response, '', 'the answer has no ETag');
  return etag;
}
