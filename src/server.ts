import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.js';
import type { Config } from './config.js';
import { firstRunBanner, prepareStore } from './first-run.js';
import { openStore } from './store/open.js';

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
    // What an acknowledged write rests on, for the operator to see.
    app.log.info({ backend: store.backend, durability: await store.durability() }, 'store opened');
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
