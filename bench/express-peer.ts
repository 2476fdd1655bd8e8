/**
 * The peer: the textbook Express version of the service, kept to show what the service gains.
 * express.json(), one query per request, each its own transaction: better-sqlite3 in WAL mode
 * with synchronous=FULL (durable like the service), or one pg query on PostgreSQL.
 * Auth is a string compare against the one bench key (no lookup), which flatters the peer.
 * Env: DATABASE_URL, PORT, BENCH_KEY.
 */
import express from 'express';
import { parseDatabaseUrl } from '../src/store/open.js';
import { requiredEnv } from './env.js';
import { openPeerDatabase } from './peer-database.js';

const expectedAuthorization = `Bearer ${requiredEnv('BENCH_KEY')}`;
const db = await openPeerDatabase(parseDatabaseUrl(requiredEnv('DATABASE_URL')));

const app = express();
app.get('/healthz', (_req, res) => {
  res.json({ status: 'ok' });
});
app.use((req, res, next) => {
  if (req.get('authorization') !== expectedAuthorization) res.status(401).json({ code: 'unauthorized' });
  else next();
});
app.get('/v1/inventory', async (_req, res) => {
  res.json(await db.list());
});
app.patch('/v1/inventory/:petId', express.json(), async (req, res) => {
  const petId = Number(req.params.petId);
  const quantity = (req.body as { quantity?: unknown } | undefined)?.quantity;
  if (!Number.isSafeInteger(petId)) {
    res.status(400).json({ code: 'invalid_pet_id' });
    return;
  }
  if (typeof quantity !== 'number' || !Number.isInteger(quantity) || quantity < 0) {
    res.status(400).json({ code: 'invalid_quantity' });
    return;
  }
  const item = await db.setQuantity(petId, quantity);
  if (item) res.json(item);
  else res.status(404).json({ code: 'not_found' });
});

const server = app.listen(Number(requiredEnv('PORT')), '127.0.0.1');
server.keepAliveTimeout = 65_000;
process.once('SIGTERM', () => server.close(() => void db.close().finally(() => process.exit(0))));
