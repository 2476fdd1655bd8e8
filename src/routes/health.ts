import type { FastifyInstance } from 'fastify';
import { ApiError } from '../errors.js';
import { jsonAnswer } from '../operations/answer.js';
import { sendAnswer } from '../http/fastify-pipeline.js';

const ALIVE = jsonAnswer(200, '{"status":"ok"}', { 'cache-control': 'no-store' });
const READY = jsonAnswer(200, '{"status":"ready"}', { 'cache-control': 'no-store' });

/** Liveness and readiness for load balancers and orchestrators, outside /v1 and without a key. */
export async function healthRoutes(app: FastifyInstance): Promise<void> {
  app.get('/healthz', { config: { access: 'public', operation: 'health' } }, async (_request, reply) => sendAnswer(reply, ALIVE));

  app.get('/readyz', { config: { access: 'public', operation: 'ready' } }, async (request, reply) => {
    // From the first moment of a shutdown: the load balancer stops sending new clients while this instance still answers.
    if (app.connections.draining) throw new ApiError('service_unavailable', 'The service is shutting down; use another instance.', { 'retry-after': '1' });
    try {
      await app.store.maintenance.ping();
    } catch (err) {
      // One line, no stack: an outage fails every probe.
      request.log.warn({ cause: err instanceof Error ? err.message : String(err) }, 'store not reachable');
      throw new ApiError('service_unavailable', 'The store is not reachable.', { 'retry-after': '1' });
    }
    return sendAnswer(reply, READY);
  });
}
