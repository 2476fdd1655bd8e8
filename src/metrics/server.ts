import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApiError } from '../errors.js';
import { errorAnswer, type Answer } from '../operations/answer.js';

export const METRICS_PATH = '/metrics';
/** Prometheus text format 0.0.4, what prom-client renders. */
export const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

export interface MetricsServerOptions {
  host: string;
  port: number;
  /** The Prometheus text: this process's registry, or the primary's sum of its workers'. */
  render: () => Promise<string>;
  /** Where a failed scrape is reported. */
  onError: (err: unknown) => void;
}

/**
 * GET /metrics on a port of its own (METRICS_PORT), apart from the API: it needs no key, so it
 * listens on loopback by default (METRICS_HOST), for a scraper on the host or a sidecar. Anything
 * else gets the API's Error object: 404 for another path, 405 for another method.
 */
export async function startMetricsServer(options: MetricsServerOptions): Promise<{ server: Server; port: number; close: () => Promise<void> }> {
  const server = createServer((req, res) => {
    const send = (answer: Answer) => {
      res.writeHead(answer.status, { ...answer.headers, 'x-content-type-options': 'nosniff' });
      res.end(req.method === 'HEAD' ? undefined : answer.body);
    };
    const path = (req.url ?? '').split('?')[0];
    if (path !== METRICS_PATH) return send(errorAnswer(new ApiError('not_found', `The metrics are at GET ${METRICS_PATH}.`)));
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(errorAnswer(new ApiError('method_not_allowed', 'Use one of: GET, HEAD.', { allow: 'GET, HEAD' })));
    options.render().then(
      (text) => send({ status: 200, headers: { 'content-type': METRICS_CONTENT_TYPE, 'cache-control': 'no-store' }, body: text }),
      (err: unknown) => {
        options.onError(err);
        send(errorAnswer(new ApiError('internal_error', 'The metrics could not be gathered; see the service log.')));
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const close = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  return { server, port: (server.address() as AddressInfo).port, close };
}
