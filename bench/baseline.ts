/**
 * The baseline: a bare node:http server with the service's data in memory, the upper bound of
 * what Node itself can serve. Same request shapes and the same JSON bytes as the service.
 * Env: DATABASE_URL (read once at start), PORT, BENCH_KEY (the one key it accepts), and
 * BASELINE_ANSWER_HEADERS (optional): the service's answer headers, which its list answers then
 * carry too (answer-headers.ts).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { itemJson } from '../src/domain/inventory.js';
import { sendJson as send, sendOk } from './answer-headers.js';
import { loadItems } from './bare-durable.js';
import { requiredEnv } from './env.js';

const ITEM_PATH = /^\/v1\/inventory\/(-?\d+)$/;

const expectedAuthorization = `Bearer ${requiredEnv('BENCH_KEY')}`;
const items = await loadItems(requiredEnv('DATABASE_URL'));
/** One JSON fragment per item, in petId order: a PATCH rewrites one fragment, not the whole list. */
const fragments = items.map((item) => itemJson(item));
const positionById = new Map(items.map((item, i) => [item.petId.toString(), i]));
/** The GET body, rebuilt on the first GET after a PATCH so that reads always see the latest write. */
let listBody: Buffer | undefined;

function listInventory(res: ServerResponse): void {
  listBody ??= Buffer.from(`[${fragments.join(',')}]`);
  sendOk(res, listBody);
}

function updateInventory(req: IncomingMessage, res: ServerResponse, petId: string): void {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    let quantity: unknown;
    try {
      quantity = (JSON.parse(Buffer.concat(chunks).toString()) as { quantity?: unknown }).quantity;
    } catch {
      return send(res, 400, '{"code":"malformed_json"}');
    }
    if (!Number.isInteger(quantity) || (quantity as number) < 0) return send(res, 400, '{"code":"invalid_quantity"}');
    const position = positionById.get(petId);
    if (position === undefined) return send(res, 404, '{"code":"not_found"}');
    const item = { ...items[position]!, quantity: quantity as number };
    items[position] = item;
    fragments[position] = itemJson(item);
    listBody = undefined;
    send(res, 200, fragments[position]);
  });
}

const server = createServer((req, res) => {
  const url = req.url ?? '/';
  if (url === '/healthz') return send(res, 200, '{"status":"ok"}');
  if (req.headers.authorization !== expectedAuthorization) return send(res, 401, '{"code":"unauthorized"}');
  if (url === '/v1/inventory' && req.method === 'GET') return listInventory(res);
  const match = ITEM_PATH.exec(url);
  if (match && req.method === 'PATCH') return updateInventory(req, res, match[1]!);
  send(res, 404, '{"code":"not_found"}');
});
server.keepAliveTimeout = 65_000;
server.listen(Number(requiredEnv('PORT')), '127.0.0.1');
process.once('SIGTERM', () => server.close(() => process.exit(0)));
