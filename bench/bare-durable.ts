/**
 * What the durable baselines (bare-durable-sqlite.ts, bare-durable-pg.ts) share: the HTTP side, a
 * bare node:http server with the service's request shapes and JSON, and the group commit that
 * hands a backend every change gathered while it was busy (or, for a synchronous backend, parsed
 * in one turn of the event loop) as one batch, and answers each after that batch committed.
 * With BASELINE_ANSWER_HEADERS, each 200 answer carries the service's answer headers (answer-headers.ts).
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { InventoryItem } from '../src/schemas/inventory.js';
import { openStore } from '../src/store/open.js';
import { sendJson as send, sendOk } from './answer-headers.js';
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

interface Waiting {
  change: BareChange;
  res: ServerResponse;
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
    batch.forEach((w, i) => answer(w.res, results[i]!));
    schedule();
  };

  const receive = (req: IncomingMessage, res: ServerResponse, petId: number, adjustment: boolean) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      let body: { quantity?: unknown; delta?: unknown };
      try {
        body = JSON.parse(Buffer.concat(chunks).toString()) as typeof body;
      } catch {
        return send(res, 400, '{"code":"malformed_json"}');
      }
      const value = adjustment ? body.delta : body.quantity;
      if (!Number.isInteger(value) || (!adjustment && (value as number) < 0)) return send(res, 400, '{"code":"invalid_quantity"}');
      const change: BareChange = { petId, requestId: randomUUID(), ...(adjustment ? { delta: value as number } : { quantity: value as number }) };
      queued.push({ change, res });
      schedule();
    });
  };

  const server = createServer((req, res) => {
    const url = req.url ?? '/';
    if (url === '/healthz') return send(res, 200, '{"status":"ok"}');
    if (req.headers.authorization !== expectedAuthorization) return send(res, 401, '{"code":"unauthorized"}');
    const match = ITEM_PATH.exec(url);
    const adjustment = match?.[2] !== undefined;
    if (match && req.method === (adjustment ? 'POST' : 'PATCH')) return receive(req, res, Number(match[1]), adjustment);
    send(res, 404, '{"code":"not_found"}');
  });
  server.keepAliveTimeout = 65_000;
  server.listen(Number(requiredEnv('PORT')), '127.0.0.1');
  process.once('SIGTERM', () =>
    server.close(() => {
      void Promise.resolve(backend.close()).finally(() => process.exit(0));
    }),
  );
}

function answer(res: ServerResponse, result: BareResult): void {
  if (typeof result === 'string') return sendOk(res, result);
  send(res, result, `{"code":"${result === 404 ? 'not_found' : result === 409 ? 'insufficient_stock' : 'unavailable'}"}`);
}
