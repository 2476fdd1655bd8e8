import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.js';
import type { Config } from './config.js';
import { firstRunBanner, prepareStore } from './first-run.js';
import { startMetricsServer } from './metrics/server.js';
import type { ServiceMetrics } from './metrics/service-metrics.js';
import { explainListenError } from './port-in-use.js';
import { openStore } from './store/open.js';
import { onStopSignals } from './stop-signals.js';

export interface ServeOptions {
  /** Load DEMO_PETS when the store has no entries. */
  demo: boolean;
  /** Where the first-run banner goes (it holds the new key, so never into the JSON log). */
  print: (text: string) => void;
  /** A cluster worker (src/cluster.ts): its primary prepared the store and sends it SIGTERM to stop. */
  worker?: boolean;
  /** Changes of quantity append no event (StoreOpenOptions.omitChangeEvents): set only by the bench, through serve. */
  omitChangeEvents?: boolean;
}

/** Opens the store, builds the app, listens, and shuts down gracefully on SIGTERM/SIGINT. */
export async function startServer(config: Config, options: ServeOptions): Promise<FastifyInstance> {
  const omitChangeEvents = options.omitChangeEvents ?? false;
  const store = await openStore(config.databaseUrl, { timeoutMs: config.storeTimeoutMs, omitChangeEvents, directUrl: config.databaseDirectUrl });
  let app: FastifyInstance;
  let firstKey: string | undefined;
  // Only with METRICS_PORT: without it nothing is measured, and prom-client (some ninety modules with its dependencies) is not loaded.
  const metrics = config.metricsPort === undefined ? undefined : new (await import('./metrics/service-metrics.js')).ServiceMetrics();
  // What an acknowledged write rests on, for the operator to see, asked first: on SQLite the answer comes from the
  // writer thread, which starts on the other core while this one builds the app. Awaited before listening, so a
  // writer that cannot start fails the start. Its failure is caught below; `void` only keeps it from being unhandled
  // meanwhile.
  const durability = store.maintenance.durability();
  void durability.catch(() => undefined);
  try {
    if (!options.worker) firstKey = await prepareStore(store, config, options.demo);
    app = await buildApp({ config, store, ...(metrics && { metrics }) });
    app.log.info({ backend: store.backend, durability: await durability }, 'store opened');
    if (omitChangeEvents) app.log.warn('changes of quantity append no events: a benchmark of the event log, never a service to use');
  } catch (err) {
    await store.close();
    throw err;
  }
  // Before listening, so a signal that follows the first request is always handled.
  handleSignals(app, config, options.worker ?? false);
  try {
    if (metrics) await serveMetrics(app, metrics, config, options.worker ?? false).catch((err: unknown) => {
      throw explainListenError(err, config.metricsPort ?? 0, 'METRICS_PORT');
    });
    await app.listen({ port: config.port, host: config.host }).catch((err: unknown) => {
      throw explainListenError(err, config.port, 'PORT');
    });
  } catch (err) {
    // Closing the store too: an open PostgreSQL pool would keep the failed process alive.
    await app.close();
    throw err;
  }
  if (firstKey) {
    const address = app.server.address();
    const port = typeof address === 'object' && address ? address.port : config.port;
    options.print(firstRunBanner(firstKey, { host: config.host, port, firstPetId: (await store.entries.listInventory())[0]?.petId }));
  }
  return app;
}

/** A worker hands its metrics to its primary, which serves the sum; a single process serves its own on METRICS_PORT. */
async function serveMetrics(app: FastifyInstance, metrics: ServiceMetrics, config: Config, worker: boolean): Promise<void> {
  if (worker) return (await import('./metrics/cluster.js')).shareMetricsWithPrimary(metrics.registry);
  const served = await startMetricsServer({
    host: config.metricsHost,
    port: config.metricsPort ?? 0,
    render: () => metrics.render(),
    onError: (err) => app.log.error({ err }, 'could not gather the metrics'),
  });
  app.addHook('onClose', served.close);
  app.log.info({ port: served.port }, `metrics listening at http://${config.metricsHost}:${served.port}/metrics`);
}

/**
 * SIGTERM/SIGINT: drain first (/readyz 503 at once, every answer closes its connection, until no
 * connection is left or SHUTDOWN_DRAIN_MS is up, but for SHUTDOWN_MIN_DRAIN_MS at least, so a load
 * balancer moves its clients away and sees the 503 before the listener closes), then
 * stop listening, close idle connections, finish in-flight requests within SHUTDOWN_TIMEOUT_MS,
 * close the store and exit 0.
 * A copy of the first signal (REPEATED_SIGNAL_MS) is no new request; a later signal exits at once.
 */
function handleSignals(app: FastifyInstance, config: Pick<Config, 'shutdownDrainMs' | 'shutdownMinDrainMs' | 'shutdownTimeoutMs'>, worker: boolean): void {
  const timeoutMs = config.shutdownTimeoutMs;
  onStopSignals((request, signal) => {
    if (request === 'copy') return void app.log.info({ signal }, 'the same signal again at once: already shutting down');
    if (request === 'stop-now') {
      // A worker may get one signal twice (its primary's and a process-group kill); its primary's second signal kills it.
      if (worker) return;
      app.log.warn({ signal }, 'second signal: exiting without waiting');
      process.exit(1);
    }
    app.log.info(
      { signal, drainMs: config.shutdownDrainMs, minDrainMs: config.shutdownMinDrainMs, connections: app.connections.size },
      'shutting down: draining connections',
    );
    const onStopListening = () => {
      app.log.info({ connections: app.connections.size }, 'shutting down: finishing in-flight requests; no longer listening');
      const timer = setTimeout(() => {
        app.log.error({ timeoutMs, connections: app.connections.size }, 'shutdown timed out');
        process.exit(1);
      }, timeoutMs);
      timer.unref();
    };
    const drained = app.connections.drain(config.shutdownDrainMs, onStopListening, config.shutdownMinDrainMs);
    drained
      .then(() => app.close())
      .then(
        () => {
          app.log.info('shut down cleanly');
          process.exit(0);
        },
        (err: unknown) => {
          app.log.error({ err }, 'shutdown failed');
          process.exit(1);
        },
      );
  });
}
