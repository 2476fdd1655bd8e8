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

/** Sends one answer: a 200 with the item's JSON (and BASELINE_ANSWER_HEADERS), or any JSON with the two headers of its own. */
interface Reply {
  ok(body: string): void;
  send(status: number, body: string): void;
}

interface Waiting {
  change: BareChange;
  reply: Reply;
}

/** Serves PATCH and adjustments on PORT with the group commit over `backend`, until SIGTERM. */
export function serveBare(backend: BareBackend): void {
  const expectedAuthorization = `Bearer ${requiredEnv('BENCH_KEY')}`;
  let queued: Waiting[] = [];
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
    batch.forEach((w, i) => answer(w.reply, results[i]!));
    schedule();
  };

  const route: Route = (method, url, authorization, reply) => {
    if (url === '/healthz') return void reply.send(200, '{"status":"ok"}');
    if (authorization !== expectedAuthorization) return void reply.send(401, '{"code":"unauthorized"}');
    const match = ITEM_PATH.exec(url);
    const adjustment = match?.[2] !== undefined;
    if (match && method === (adjustment ? 'POST' : 'PATCH')) return { petId: Number(match[1]), adjustment };
    reply.send(404, '{"code":"not_found"}');
  };
  const receive: Receive = (text, petId, adjustment, reply) => {
    let body: { quantity?: unknown; delta?: unknown };
    try {
      body = JSON.parse(text) as typeof body;
    } catch {
      return reply.send(400, '{"code":"malformed_json"}');
    }
    const value = adjustment ? body.delta : body.quantity;
    if (!Number.isInteger(value) || (!adjustment && (value as number) < 0)) return reply.send(400, '{"code":"invalid_quantity"}');
    const change: BareChange = { petId, requestId: randomUUID(), ...(adjustment ? { delta: value as number } : { quantity: value as number }) };
    queued.push({ change, reply });
    schedule();
  };

  const server = bareHttp() === 'net' ? netServer(route, receive) : nodeServer(route, receive);
  server.listen(Number(requiredEnv('PORT')), '127.0.0.1');
  process.once('SIGTERM', () =>
    server.close(() => {
      void Promise.resolve(backend.close()).finally(() => process.exit(0));
    }),
  );
}

/** From a request's method, path and Authorization (as either framing reads them): the pet it changes and whether by a delta, or undefined once it was answered (health, 401, 404). */
type Route = (method: string | undefined, url: string, authorization: string | undefined, reply: Reply) => { petId: number; adjustment: boolean } | undefined;
/** A change's body, once it has all arrived: parsed, checked and queued for the next batch, or refused. */
type Receive = (text: string, petId: number, adjustment: boolean, reply: Reply) => void;

function nodeServer(route: Route, receive: Receive) {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const reply: Reply = {
      ok: (body) => sendOk(res, body),
      send: (status, body) => sendJson(res, status, body),
    };
    const target = route(req.method, req.url ?? '/', req.headers.authorization, reply);
    if (!target) return;
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => receive(Buffer.concat(chunks).toString(), target.petId, target.adjustment, reply));
  });
  server.keepAliveTimeout = 65_000;
  return server;
}

function netServer(route: Route, receive: Receive) {
  const plainLines = `content-type: ${JSON_TYPE}\r\n`;
  const okLines = answerHeaderLinesFromEnv() ?? (() => plainLines);
  return http1Server((request, respond: Http1Respond) => {
    const reply: Reply = {
      ok: (body) => respond(200, okLines(JSON_TYPE), body),
      send: (status, body) => respond(status, plainLines, body),
    };
    const target = route(request.method, request.url, request.headers.authorization, reply);
    if (target) receive(request.body.toString(), target.petId, target.adjustment, reply);
  });
}

function answer(reply: Reply, result: BareResult): void {
  if (typeof result === 'string') return reply.ok(result);
  reply.send(result, `{"code":"${result === 404 ? 'not_found' : result === 409 ? 'insufficient_stock' : 'unavailable'}"}`);
}
