import type { FastifyInstance } from 'fastify';
import { ApiError } from '../errors.js';

/** Liveness and readiness for load balancers and orchestrators (PD 6.3), outside /v1 and unauthenticated. */
export async function healthRoutes(app: FastifyInstance): Promise<void> {
  app.get('/healthz', { config: { public: true } }, async (_request, reply) => {
    reply.header('cache-control', 'no-store');
    return { status: 'ok' };
  });

  app.get('/readyz', { config: { public: true } }, async (request, reply) => {
    try {
      await app.store.ping();
    } catch (err) {
      request.log.warn({ err }, 'store not reachable');
      throw new ApiError('service_unavailable', 'The store is not reachable.', { 'retry-after': '1' });
    }
    reply.header('cache-control', 'no-store');
    return { status: 'ready' };
  });
}
