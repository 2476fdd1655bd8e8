/**
 * What the durable baselines (bare-durable-sqlite.ts, bare-durable-pg.ts) share: the HTTP side, a
 * bare node:http server with the service's request shapes and JSON, and the group commit that
 * hands a backend every change gathered while it was busy (or, for a synchronous backend, parsed
 * in one turn of the event loop) as one batch, and answers each after that batch committed.
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
import { requiredEnv } from './env.js';

/** What each change writes besides the entry: nothing, its history row, or its history row and its event. */
export type BareWrites = 'entry' | 'history' | 'events';
export const BARE_WRITES: readonly BareWrites[] = ['entry', 'history', 'events'];

/** A PATCH (quantity) or an adjustment (delta), parsed. */
export interface BareChange {
  petId: number;
  quantity?: number;
  delta?: number;
  requestId: string;
}

/** Per change, in order: the item's JSON once written, or the status it was refused with (404, 409). */
export type BareResult = string | number;

export interface BareBackend {
  items: readonly InventoryItem[];
  /** Writes the batch in one transaction, durable when it resolves. */
  commit(changes: BareChange[]): Promise<BareResult[]>;
  close(): Promise<void> | void;
}

const ITEM_PATH = /^\/v1\/inventory\/(\d+)(\/adjustments)?$/;

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
 * net framing's respond): a 200 with the item's JSON (and BASELINE_ANSWER_HEADERS), or any JSON with
 * the two headers of its own. Module-level functions, so that a request allocates nothing for them.
 */
interface Framing<H> {
  ok(handle: H, body: string): void;
  send(handle: H, status: number, body: string): void;
}

interface Waiting<H> {
  change: BareChange;
  handle: H;
}

/** Serves PATCH and adjustments on PORT with the group commit over `backend`, until SIGTERM. */
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
    batch.forEach((w, i) => answer(framing, w.handle, results[i]!));
    schedule();
  };

  /** The path's match when the request is a change (its pet, and [2] set for an adjustment); else undefined, once it was answered (health, 401, 404). */
  const route = (method: string | undefined, url: string, authorization: string | undefined, handle: H): RegExpExecArray | undefined => {
    if (url === '/healthz') return void framing.send(handle, 200, '{"status":"ok"}');
    if (authorization !== expectedAuthorization) return void framing.send(handle, 401, '{"code":"unauthorized"}');
    const match = ITEM_PATH.exec(url);
    if (match && method === (match[2] === undefined ? 'PATCH' : 'POST')) return match;
    framing.send(handle, 404, '{"code":"not_found"}');
  };
  /** A change's body, once it has all arrived: parsed, checked and queued for the next batch, or refused. */
  const receive = (text: string, match: RegExpExecArray, handle: H): void => {
    const adjustment = match[2] !== undefined;
    let body: { quantity?: unknown; delta?: unknown };
    try {
      body = JSON.parse(text) as typeof body;
    } catch {
      return framing.send(handle, 400, '{"code":"malformed_json"}');
    }
    const value = adjustment ? body.delta : body.quantity;
    if (!Number.isInteger(value) || (!adjustment && (value as number) < 0)) return framing.send(handle, 400, '{"code":"invalid_quantity"}');
    const petId = Number(match[1]);
    const change: BareChange = { petId, requestId: randomUUID(), ...(adjustment ? { delta: value as number } : { quantity: value as number }) };
    queued.push({ change, handle });
    schedule();
  };
  return { route, receive };
}

const NODE_FRAMING: Framing<ServerResponse> = { ok: sendOk, send: sendJson };

function nodeServer(backend: BareBackend) {
  const { route, receive } = changes(backend, NODE_FRAMING);
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const match = route(req.method, req.url ?? '/', req.headers.authorization, res);
    if (!match) return;
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => receive(Buffer.concat(chunks).toString(), match, res));
  });
  server.keepAliveTimeout = 65_000;
  return server;
}

function netServer(backend: BareBackend) {
  const plainLines = `content-type: ${JSON_TYPE}\r\n`;
  const okLines = answerHeaderLinesFromEnv() ?? (() => plainLines);
  const framing: Framing<Http1Respond> = {
    ok: (respond, body) => respond(200, okLines(JSON_TYPE), body),
    send: (respond, status, body) => respond(status, plainLines, body),
  };
  const { route, receive } = changes(backend, framing);
  return http1Server((request, respond) => {
    const match = route(request.method, request.url, request.headers.authorization, respond);
    if (match) receive(request.body.toString(), match, respond);
  });
}

function answer<H>(framing: Framing<H>, handle: H, result: BareResult): void {
  if (typeof result === 'string') return framing.ok(handle, result);
  framing.send(handle, result, `{"code":"${result === 404 ? 'not_found' : result === 409 ? 'insufficient_stock' : 'unavailable'}"}`);
}
