import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { Static, TObject, TSchema } from 'typebox';
import type { ListCache } from '../cache/list-cache.js';
import type { Principal, Scope } from '../domain/api-key.js';
import type { ApiError } from '../errors.js';
import type { Store } from '../store/store.js';
import type { Answer } from './answer.js';
import type { ChangeOptions } from './change-request.js';
import type { NoQuery, OperationSpec } from './operation.js';

/** What the process's event streams offer the stream operation (src/http/event-streams.ts keeps them). */
export interface EventStreamPort {
  /** Refuses (503) when no stream may open now: at the cap, or shutting down; called before anything is read. */
  admit(): void;
  /**
   * Checks again and opens a stream on `res` from `start`, in one turn (no stream opens between the
   * check and this one); throws the refusal before writing anything. Resolves when the connection is gone.
   */
  hold(res: ServerResponse, headers: (string | number)[], start: number): Promise<void>;
}

/** What the app gives the operations to answer with; each operation's `serve` takes the parts it needs. */
export interface OperationDependencies {
  /** The store's ports the operations read and write. */
  store: Pick<Store, 'entries' | 'changes' | 'history' | 'events' | 'webhookEndpoints' | 'reservations'>;
  /** The rendered list, read fresh. */
  listCache: Pick<ListCache, 'current'>;
  /** What every change of a count follows: REQUIRE_IF_MATCH, IDEMPOTENCY_RECORDS_PER_KEY. */
  changeOptions: ChangeOptions;
  /** BATCH_MAX_CHANGES */
  batchMaxChanges: number;
  /** RESERVATION_MAX_ITEMS and RESERVATION_TTL_SECONDS */
  reservationLimits: { maxItems: number; ttlSeconds: number };
  /** The service's OpenAPI document, serialised once. */
  openApiDocumentJson: string;
  /** The process's event streams. */
  eventStreams: EventStreamPort;
}

/** A request as an operation reads it, whichever adapter received it: its parts, already checked against the declaration. */
export interface OperationRequest {
  /** The request's headers, names in lower case. */
  headers: IncomingHttpHeaders;
  /** The key that authenticated the request; null for a public operation. */
  principal: Principal | null;
  /** The request id (X-Request-Id, or a new one). */
  requestId: string;
  /** The path's petId, parsed, on the paths that have one. */
  petId?: bigint;
  /** The path's parameters as sent (a reservation's id), on the paths that have any; the operation checks them. */
  params?: Readonly<Record<string, string>> | undefined;
  /** The query, as the declaration's querystring schema passed it. */
  query: unknown;
  /** The body, parsed, and checked by the declaration's schema unless the operation checks it itself. */
  body: unknown;
  /** Takes `count` more requests from the caller's per-key rate limit (the pipeline took the request's first), or answers the refusal; absent without a limit. */
  chargeRequests?: ((count: number) => Promise<ApiError | undefined>) | undefined;
}

/** The request of the operation `S`, typed from its declaration: its query, body, petId and principal. */
export type RequestOf<S extends OperationSpec> = OperationRequest & {
  query: S extends { querystring: infer Q extends TObject } ? Static<Q> : Static<typeof NoQuery>;
  body: S extends { body: { checkedByOperation: true } } ? unknown : S extends { body: { schema: infer B extends TObject } } ? Static<B> : undefined;
  principal: S['scope'] extends Scope ? Principal : null;
} & (S extends { pathParams: { petId: TSchema } } ? { petId: bigint } : unknown);

/**
 * An answer that keeps its connection (a stream of events): the adapter adds the pipeline's
 * headers to its own, then hands it the response, which it writes to itself until the client leaves.
 */
export interface HeldAnswer {
  /** The status its head is written with. */
  status: number;
  /** Its own headers (lower case), to which the adapter adds the pipeline's. */
  headers: Record<string, string>;
  /** Writes the head (with `headers`, flat: the answer's and the pipeline's) and the body; throws the refusal before writing anything; resolves when the connection is gone. */
  hold(res: ServerResponse, headers: (string | number)[]): Promise<void>;
}

/** What an operation answers a request with. */
export type Reply = Answer | HeldAnswer;

/** An operation's answer to one request. */
export type Handler<R extends OperationRequest = OperationRequest> = (request: R) => Reply | Promise<Reply>;

/** An API operation: its declaration, and how it answers given the app's dependencies (framework-free: an adapter registers it). */
export interface Operation extends OperationSpec {
  /** The function that answers each request, made once from the app's dependencies. */
  serve: (dependencies: OperationDependencies) => Handler;
}

/**
 * An operation: its declaration, and how it answers, its handler's request typed from the
 * declaration. The one cast: an adapter builds the request from this declaration and checks it
 * against its schemas, so what reaches the handler is the RequestOf this declaration.
 */
export function operation<const S extends OperationSpec>(declaration: S, serve: (dependencies: OperationDependencies) => Handler<RequestOf<S>>): S & Pick<Operation, 'serve'> {
  return { ...declaration, serve: serve as Operation['serve'] };
}
