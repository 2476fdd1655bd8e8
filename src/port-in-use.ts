import { createServer } from 'node:net';
import type { Config } from './config.js';

/** The settings that name a port the service listens on. */
export type PortSetting = 'PORT' | 'METRICS_PORT';

/** A port another process holds: the message is the one line the CLI prints, saying how to choose another. */
export class PortInUseError extends Error {
  constructor(port: number, setting: PortSetting) {
    const other = port < 65535 ? port + 1 : port - 1;
    const how = setting === 'PORT' ? `PORT=${other} npm start (or serve --port ${other})` : `METRICS_PORT=${other}`;
    super(`${setting === 'PORT' ? 'port' : 'metrics port'} ${port} is already in use; choose another: ${how}`);
    this.name = 'PortInUseError';
  }
}

/** A failed listen as the error to report: a port in use becomes a PortInUseError, anything else stays as it is. */
export function explainListenError(err: unknown, port: number, setting: PortSetting): unknown {
  return (err as NodeJS.ErrnoException | undefined)?.code === 'EADDRINUSE' ? new PortInUseError(port, setting) : err;
}

/**
 * Throws a PortInUseError when a port the service is set to listen on is taken: asked before the
 * store is made or a worker forked, so the answer comes at once, in one line (each worker would
 * otherwise fail on its own). A port taken after this is still explained when the listen fails.
 */
export async function checkPortsFree(config: Pick<Config, 'port' | 'host' | 'metricsPort' | 'metricsHost'>): Promise<void> {
  if (config.port !== 0 && (await isPortInUse(config.port, config.host))) throw new PortInUseError(config.port, 'PORT');
  const metricsPort = config.metricsPort ?? 0;
  if (metricsPort !== 0 && (await isPortInUse(metricsPort, config.metricsHost))) throw new PortInUseError(metricsPort, 'METRICS_PORT');
}

/** Whether another process listens on `port` at `host` now (false when it could be bound, or failed for another reason). */
export function isPortInUse(port: number, host: string): Promise<boolean> {
  return new Promise((done) => {
    const probe = createServer();
    probe.once('error', (err: NodeJS.ErrnoException) => done(err.code === 'EADDRINUSE'));
    probe.listen(port, host, () => probe.close(() => done(false)));
  });
}
