import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.js';
import { issueApiKey } from './auth/issue-key.js';
import type { Config } from './config.js';
import { DEMO_PETS } from './domain/demo-pets.js';
import { openStore } from './store/open.js';
import type { InventoryStore } from './store/store.js';

export interface ServeOptions {
  /** Load DEMO_PETS when the store has no entries. */
  demo: boolean;
  /** Where the first-run banner goes (it holds the new key, so never into the JSON log). */
  print: (text: string) => void;
}

/** Opens the store, builds the app, listens, and shuts down gracefully on SIGTERM/SIGINT. */
export async function startServer(config: Config, options: ServeOptions): Promise<FastifyInstance> {
  const store = await openStore(config.databaseUrl);
  let app: FastifyInstance;
  let firstKey: string | undefined;
  try {
    if (options.demo && (await store.listInventory()).length === 0) await store.addItems(DEMO_PETS);
    if ((await store.countApiKeys()) === 0) {
      firstKey = (
        await issueApiKey(store, { name: 'first-run', environment: config.environment, scopes: ['inventory:write'], expiresAt: null })
      ).key;
    }
    app = await buildApp({ config, store });
  } catch (err) {
    await store.close();
    throw err;
  }
  // Before listening, so a signal that follows the first request is always handled.
  handleSignals(app, config.shutdownTimeoutMs);
  await app.listen({ port: config.port, host: config.host });
  if (firstKey) options.print(await firstRunBanner(app, store, config, firstKey));
  return app;
}

function handleSignals(app: FastifyInstance, timeoutMs: number): void {
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) {
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

async function firstRunBanner(app: FastifyInstance, store: InventoryStore, config: Config, key: string): Promise<string> {
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  const host = ['0.0.0.0', '::', ''].includes(config.host) ? 'localhost' : config.host;
  const base = `http://${host.includes(':') ? `[${host}]` : host}:${port}/v1`;
  const pets = await store.listInventory();
  const petId = pets[0]?.petId ?? 1n;
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
  if (pets.length === 0) {
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
