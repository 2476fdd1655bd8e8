import type { FastifyInstance } from 'fastify';
import { ApiError } from '../errors.js';
import { jsonAnswer } from '../operations/answer.js';
import { sendAnswer } from '../http/fastify-pipeline.js';

const ALIVE = jsonAnswer(200, '{"status":"ok"}', { 'cache-control': 'no-store' });
const READY = jsonAnswer(200, '{"status":"ready"}', { 'cache-control': 'no-store' });

/** Liveness and readiness for load balancers and orchestrators, outside /v1 and without a key. */
export async function healthRoutes(app: FastifyInstance): Promise<void> {
  app.get('/healthz', { config: { access: 'public' } }, async (_request, reply) => sendAnswer(reply, ALIVE));

  app.get('/readyz', { config: { access: 'public' } }, async (request, reply) => {
    try {
      await app.store.ping();
    } catch (err) {
      request.log.warn({ err }, 'store not reachable');
      throw new ApiError('service_unavailable', 'The store is not reachable.', { 'retry-after': '1' });
    }
    return sendAnswer(reply, READY);
  });
}
