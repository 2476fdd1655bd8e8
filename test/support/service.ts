import type { TestContext } from 'node:test';
import { issueApiKey } from '../../src/auth/issue-key.js';
import type { Scope } from '../../src/domain/api-key.js';
import type { InventoryItem } from '../../src/schemas/inventory.js';
import type { Store } from '../../src/store/store.js';
import { createTestDatabase, type Backend, type TestDatabase } from './backends.js';
import { freePort, sleep, spawnServer, startServerProcess, type ServerProcess } from './process.js';

/** Keys of every kind a client could send; only `write` and `read` are valid on a production instance. */
export interface KeySet {
  write: string;
  read: string;
  revoked: string;
  expired: string;
  /** A valid key of the other environment (staging, inv_test_): refused by a production instance. */
  staging: string;
}

/** A server process on a fresh database of `backend`, with pets and keys, and the test's own view of its store. */
export interface Service {
  server: ServerProcess;
  db: TestDatabase;
  /** The same database, opened by the test: to check what the server stored, without going through it. */
  store: Store;
  keys: KeySet;
  /** Restarts the server process on the same database (after a kill, say); `server` is the new one. */
  restart(): Promise<ServerProcess>;
}

/** petIds 1..count, each with quantity 0. */
export function pets(count: number): InventoryItem[] {
  return Array.from({ length: count }, (_, i) => ({ petId: BigInt(i + 1), quantity: 0, status: 'available' as const }));
}

/** Seeds a fresh database (pets, keys) from the test process, then starts `petstore-inventory serve` on it. */
export async function startService(
  t: TestContext,
  backend: Backend,
  options: { items: readonly InventoryItem[]; env?: Record<string, string>; quiet?: boolean },
): Promise<Service> {
  const db = await createTestDatabase(backend, t);
  const store = await db.open();
  await store.changes.addItems(options.items);
  const issue = async (scopes: Scope[], environment: 'production' | 'staging' = 'production', expiresAt: Date | null = null) =>
    issueApiKey(store.keys, { name: `hardening ${scopes.join(' ')}`, environment, scopes, expiresAt });
  const revoked = await issue(['inventory:write']);
  await store.keys.revokeApiKey(revoked.record.id, new Date());
  const keys: KeySet = {
    write: (await issue(['inventory:write'])).key,
    read: (await issue(['inventory:read'])).key,
    revoked: revoked.key,
    expired: (await issue(['inventory:write'], 'production', new Date(Date.now() - 60_000))).key,
    staging: (await issue(['inventory:write'], 'staging')).key,
  };
  const env = { DATABASE_URL: db.databaseUrl, INVENTORY_ENV: 'production', ...options.env };
  const start = () => (options.quiet ? startQuietServer(t, env) : startServerProcess(t, env));
  const service: Service = {
    server: await start(),
    db,
    store,
    keys,
    async restart() {
      service.server = await start();
      return service.server;
    },
  };
  return service;
}

/**
 * A server process logging warnings only (a long load at info would pile up gigabytes of request
 * lines in the test): on a port picked here, ready once /healthz answers.
 */
async function startQuietServer(t: TestContext, env: Record<string, string>): Promise<ServerProcess> {
  const port = await freePort();
  const server = spawnServer(t, { ...env, PORT: String(port), LOG_LEVEL: 'warn' });
  const baseUrl = `http://127.0.0.1:${port}`;
  for (const until = Date.now() + 20_000; ; await sleep(50)) {
    if (server.proc.exitCode !== null) throw new Error(`server exited with ${server.proc.exitCode} before listening:\n${server.stdout()}\n${server.stderr()}`);
    if (Date.now() > until) throw new Error(`server did not start in 20 s:\n${server.stdout()}\n${server.stderr()}`);
    if (await fetch(`${baseUrl}/healthz`).then((r) => r.ok, () => false)) break;
  }
  return { ...server, port, baseUrl };
}

/** Near misses of a key: one character changed, truncated, one character more, the other environment's prefix. */
export function nearMisses(key: string): string[] {
  const at = key.length - 5;
  const changed = `${key.slice(0, at)}${key[at] === 'a' ? 'b' : 'a'}${key.slice(at + 1)}`;
  const otherPrefix = key.startsWith('inv_live_') ? key.replace('inv_live_', 'inv_test_') : key.replace('inv_test_', 'inv_live_');
  return [changed, key.slice(0, -1), key.slice(0, 20), `${key}x`, otherPrefix, key.toUpperCase()];
}
