import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.js';
import { generateApiKey } from './domain/api-key.js';
import type { Config } from './config.js';
import { DEMO_PETS } from './domain/demo-pets.js';
import { openStore } from './store/open.js';
import { DuplicatePetError, type InventoryStore } from './store/store.js';

export interface ServeOptions {
  /** Load DEMO_PETS when the store has no entries. */
  demo: boolean;
  /** Where the first-run banner goes (it holds the new key, so never into the JSON log). */
  print: (text: string) => void;
  /** A cluster worker (src/cluster.ts): its primary prepared the store and sends it SIGTERM to stop. */
  worker?: boolean;
}

/** Opens the store, builds the app, listens, and shuts down gracefully on SIGTERM/SIGINT. */
export async function startServer(config: Config, options: ServeOptions): Promise<FastifyInstance> {
  const store = await openStore(config.databaseUrl);
  let app: FastifyInstance;
  let firstKey: string | undefined;
  try {
    if (!options.worker) firstKey = await prepareStore(store, config, options.demo);
    app = await buildApp({ config, store });
  } catch (err) {
    await store.close();
    throw err;
  }
  // Before listening, so a signal that follows the first request is always handled.
  handleSignals(app, config.shutdownTimeoutMs, options.worker ?? false);
  try {
    await app.listen({ port: config.port, host: config.host });
  } catch (err) {
    // Closing the store too: an open PostgreSQL pool would keep the failed process alive.
    await app.close();
    throw err;
  }
  if (firstKey) {
    const address = app.server.address();
    const port = typeof address === 'object' && address ? address.port : config.port;
    options.print(firstRunBanner(firstKey, { host: config.host, port, firstPetId: (await store.listInventory())[0]?.petId }));
  }
  return app;
}

/**
 * What a server does to a store before it serves: adds DEMO_PETS when asked and the store has no
 * entries, and on a store with no API keys creates the first-run key, which it returns.
 */
export async function prepareStore(store: InventoryStore, config: Config, demo: boolean): Promise<string | undefined> {
  if (demo && (await store.listInventory()).length === 0) {
    try {
      await store.addItems(DEMO_PETS);
    } catch (err) {
      // Another instance starting at the same moment added them first.
      if (!(err instanceof DuplicatePetError)) throw err;
    }
  }
  // Atomic: of several instances starting on an empty store, exactly one creates (and prints) the key.
  const issued = generateApiKey({ name: 'first-run', environment: config.environment, scopes: ['inventory:write'], expiresAt: null });
  return (await store.insertFirstApiKey(issued.record)) ? issued.key : undefined;
}

function handleSignals(app: FastifyInstance, timeoutMs: number, worker: boolean): void {
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) {
      // A worker may get one signal twice (its primary's and a process-group kill); its primary's second signal kills it.
      if (worker) return;
      app.log.warn({ signal }, 'second signal: exiting without waiting');
      process.exit(1);
    }
    stopping = true;
    app.log.info({ signal }, 'shutting down: finishing in-flight requests');
    const timer = setTimeout(() => {
      app.log.error({ timeoutMs }, 'shutdown timed out');
      process.exit(1);
    }, timeoutMs);
    timer.unref();
    app.close().then(
      () => {
        app.log.info('shut down cleanly');
        process.exit(0);
      },
      (err: unknown) => {
        app.log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

/** Where the banner's curl lines point, and the pet its PATCH names (undefined: the store has none yet). */
export interface BannerTarget {
  host: string;
  port: number;
  firstPetId: bigint | undefined;
}

/** The first-run banner: the new key, shown once, with curl lines ready to paste. */
export function firstRunBanner(key: string, { host: listenHost, port, firstPetId }: BannerTarget): string {
  const host = ['0.0.0.0', '::', ''].includes(listenHost) ? 'localhost' : listenHost;
  const base = `http://${host.includes(':') ? `[${host}]` : host}:${port}/v1`;
  const petId = firstPetId ?? 1n;
  const lines = [
    '',
    'First run: created an API key with scope inventory:write.',
    'It is shown only this once; store it now:',
    '',
    `    ${key}`,
    '',
    'List the stock of every pet:',
    `    curl -s ${base}/inventory -H 'Authorization: Bearer ${key}'`,
    '',
    `Set the stock of pet ${petId}:`,
    `    curl -s -X PATCH ${base}/inventory/${petId} -H 'Authorization: Bearer ${key}' -H 'Content-Type: application/json' -d '{"quantity": 5}'`,
    '',
  ];
  if (firstPetId === undefined) {
    lines.push(
      'The store has no pets yet, so that PATCH answers 404 until you add one:',
      `    ./bin/petstore-inventory pets add --pet-id ${petId} --status available --quantity 3`,
      'or restart with a few demo pets: npm start -- --demo',
      '',
    );
  }
  lines.push('More keys: ./bin/petstore-inventory keys create --name NAME --scope inventory:read', '');
  return lines.join('\n');
}
