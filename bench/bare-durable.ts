/**
 * What the durable baselines (bare-durable-sqlite.ts, bare-durable-pg.ts) share: the HTTP side, a
 * bare node:http server with the service's request shapes and JSON, and the group commit that
 * hands a backend every change gathered while it was busy (or, for a synchronous backend, parsed
 * in one turn of the event loop) as one batch, and answers each after that batch committed.
 * The changes are PATCHes, adjustments, and creations of reservations (POST /v1/reservations of
 * one item), which write the rows a creation writes in the service's store (bare-reservation.ts).
 * With BASELINE_ANSWER_HEADERS, each 200 answer carries the service's answer headers (answer-headers.ts).
 * With BARE_HTTP=net, the same server frames its requests and answers itself on node:net
 * (bare-http1.ts) rather than on node:http: what that framing would save a server.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { InventoryItem } from '../src/schemas/inventory.js';
import { openStore } from '../src/store/open.js';
import { answerHeaderLinesFromEnv, JSON_TYPE, sendJson, sendOk } from './answer-headers.js';
import { http1Server, type Http1Respond } from './bare-http1.js';
import { readBareHold, reservationLocation, type BareHold } from './bare-reservation.js';
import { requiredEnv } from './env.js';

/** What each PATCH or adjustment writes besides the entry: nothing, its history row, or its history row and its event. A reservation writes its own rows whatever this says. */
export type BareWrites = 'entry' | 'history' | 'events';
export const BARE_WRITES: readonly BareWrites[] = ['entry', 'history', 'events'];

/** A PATCH (quantity), an adjustment (delta) or a reservation's creation (hold: of petId), parsed. */
export interface BareChange {
  petId: number;
  quantity?: number;
  delta?: number;
  hold?: BareHold;
  requestId: string;
}

/** Per change, in order: the item's (or the reservation's) JSON once written, or the status it was refused with (404, 409). */
export type BareResult = string | number;

export interface BareBackend {
  items: readonly InventoryItem[];
  /** Writes the batch in one transaction, durable when it resolves. */
  commit(changes: BareChange[]): Promise<BareResult[]>;
  close(): Promise<void> | void;
}

const ITEM_PATH = /^\/v1\/inventory\/(\d+)(\/adjustments)?$/;
const RESERVATIONS_PATH = '/v1/reservations';

/** What a request changes: a pet's entry, by PATCH or by adjustment, or nothing yet (a reservation names its pet in its body). */
type Target = { kind: 'patch' | 'adjustment'; petId: number } | { kind: 'reservation' };

const RESERVATION_TARGET: Target = { kind: 'reservation' };

/** How a bare server frames HTTP: with node:http (the default), or itself on node:net (bare-http1.ts). */
export type BareHttp = 'node' | 'net';

/** BARE_HTTP from the environment (default: node:http). */
export function bareHttp(): BareHttp {
  const value = process.env.BARE_HTTP ?? 'node';
  if (value !== 'node' && value !== 'net') throw new Error('BARE_HTTP must be node or net');
  return value;
}

/** Where the SQLite baseline commits a batch: on the event loop, or in a writer thread (bare-durable-sqlite.ts). */
export type BareCommit = 'loop' | 'thread';

/** BARE_COMMIT from the environment (default: on the event loop). */
export function bareCommit(): BareCommit {
  const value = process.env.BARE_COMMIT ?? 'loop';
  if (value !== 'loop' && value !== 'thread') throw new Error('BARE_COMMIT must be loop or thread');
  return value;
}

/** BARE_WRITES from the environment (default: the entry alone). */
export function bareWrites(): BareWrites {
  const value = process.env.BARE_WRITES ?? 'entry';
  if (!(BARE_WRITES as readonly string[]).includes(value)) throw new Error(`BARE_WRITES must be one of ${BARE_WRITES.join(', ')}`);
  return value as BareWrites;
}

/** The pets of a database the bench seeded, read through the service's store once at start. */
export async function loadItems(databaseUrl: string): Promise<InventoryItem[]> {
  const store = await openStore(databaseUrl);
  try {
    return await store.entries.listInventory();
  } finally {
    await store.close();
  }
}

/**
 * How a framing sends an answer on its own handle for a request (node:http's ServerResponse, or the
 * net framing's respond): a 200 with the item's JSON (and BASELINE_ANSWER_HEADERS), a 201 with a new
 * reservation's JSON and its Location, as the service answers one, or any JSON with the two headers
 * of its own. Module-level functions, so that a request allocates nothing for them.
 */
interface Framing<H> {
  ok(handle: H, body: string): void;
  created(handle: H, body: string, location: string): void;
  send(handle: H, status: number, body: string): void;
}

interface Waiting<H> {
  change: BareChange;
  handle: H;
}

/** Serves PATCH, adjustments and reservations on PORT with the group commit over `backend`, until SIGTERM. */
export function serveBare(backend: BareBackend): void {
  const server = bareHttp() === 'net' ? netServer(backend) : nodeServer(backend);
  server.listen(Number(requiredEnv('PORT')), '127.0.0.1');
  process.once('SIGTERM', () =>
    server.close(() => {
      void Promise.resolve(backend.close()).finally(() => process.exit(0));
    }),
  );
}

/** What both framings do with a request: route it, and queue each change for the group commit over `backend`. */
function changes<H>(backend: BareBackend, framing: Framing<H>) {
  const expectedAuthorization = `Bearer ${requiredEnv('BENCH_KEY')}`;
  let queued: Waiting<H>[] = [];
  let committing = false;
  let scheduled = false;

  const schedule = () => {
    if (scheduled || committing || queued.length === 0) return;
    scheduled = true;
    // After the I/O phase: every request parsed in this turn joins the batch.
    setImmediate(() => void flush());
  };
  const flush = async () => {
    scheduled = false;
    const batch = queued;
    queued = [];
    committing = true;
    let results: BareResult[];
    try {
      results = await backend.commit(batch.map((w) => w.change));
    } catch (err) {
      process.stderr.write(`bare durable: batch failed: ${(err as Error).message}\n`);
      results = batch.map(() => 503);
    }
    committing = false;
    batch.forEach((w, i) => answer(framing, w.handle, w.change, results[i]!));
    schedule();
  };

  /** What the request changes; else undefined, once it was answered (health, 401, 404). */
  const route = (method: string | undefined, url: string, authorization: string | undefined, handle: H): Target | undefined => {
    if (url === '/healthz') return void framing.send(handle, 200, '{"status":"ok"}');
    if (authorization !== expectedAuthorization) return void framing.send(handle, 401, '{"code":"unauthorized"}');
    if (url === RESERVATIONS_PATH && method === 'POST') return RESERVATION_TARGET;
    const match = ITEM_PATH.exec(url);
    if (match && method === (match[2] === undefined ? 'PATCH' : 'POST')) return { kind: match[2] === undefined ? 'patch' : 'adjustment', petId: Number(match[1]) };
    framing.send(handle, 404, '{"code":"not_found"}');
  };
  /** A change's body, once it has all arrived: parsed, checked and queued for the next batch, or refused. */
  const receive = (text: string, target: Target, handle: H): void => {
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return framing.send(handle, 400, '{"code":"malformed_json"}');
    }
    const change = target.kind === 'reservation' ? reservationOf(body) : entryChangeOf(body, target.kind, target.petId);
    if (typeof change === 'string') return framing.send(handle, 400, `{"code":"${change}"}`);
    queued.push({ change, handle });
    schedule();
  };
  return { route, receive };
}

/** A PATCH's or an adjustment's body as the change it asks for, or the code of its refusal. */
function entryChangeOf(body: unknown, kind: 'patch' | 'adjustment', petId: number): BareChange | string {
  const fields = (body ?? {}) as { quantity?: unknown; delta?: unknown };
  const value = kind === 'adjustment' ? fields.delta : fields.quantity;
  if (!Number.isInteger(value) || (kind === 'patch' && (value as number) < 0)) return 'invalid_quantity';
  return { petId, requestId: randomUUID(), ...(kind === 'adjustment' ? { delta: value as number } : { quantity: value as number }) };
}

/** A reservation's body as the creation it asks for, or the code of its refusal. */
function reservationOf(body: unknown): BareChange | string {
  const read = readBareHold(body);
  return typeof read === 'string' ? read : { petId: read.petId, hold: read.hold, requestId: randomUUID() };
}

/** A new reservation's answer, as the service's: 201, its JSON and its Location. */
function sendCreated(res: ServerResponse, body: string, location: string): void {
  res.writeHead(201, { 'content-type': JSON_TYPE, 'content-length': Buffer.byteLength(body), location });
  res.end(body);
}

const NODE_FRAMING: Framing<ServerResponse> = { ok: sendOk, created: sendCreated, send: sendJson };

function nodeServer(backend: BareBackend) {
  const { route, receive } = changes(backend, NODE_FRAMING);
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const target = route(req.method, req.url ?? '/', req.headers.authorization, res);
    if (!target) return;
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => receive(Buffer.concat(chunks).toString(), target, res));
  });
  server.keepAliveTimeout = 65_000;
  return server;
}

function netServer(backend: BareBackend) {
  const plainLines = `content-type: ${JSON_TYPE}\r\n`;
  const okLines = answerHeaderLinesFromEnv() ?? (() => plainLines);
  const framing: Framing<Http1Respond> = {
    ok: (respond, body) => respond(200, okLines(JSON_TYPE), body),
    created: (respond, body, location) => respond(201, `${plainLines}location: ${location}\r\n`, body),
    send: (respond, status, body) => respond(status, plainLines, body),
  };
  const { route, receive } = changes(backend, framing);
  return http1Server((request, respond) => {
    const target = route(request.method, request.url, request.headers.authorization, respond);
    if (target) receive(request.body.toString(), target, respond);
  });
}

function answer<H>(framing: Framing<H>, handle: H, change: BareChange, result: BareResult): void {
  if (typeof result === 'string') return change.hold ? framing.created(handle, result, reservationLocation(change.hold)) : framing.ok(handle, result);
  framing.send(handle, result, `{"code":"${result === 404 ? 'not_found' : result === 409 ? 'insufficient_stock' : 'unavailable'}"}`);
}
