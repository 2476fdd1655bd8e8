import type { FastifyInstance, HTTPMethods } from 'fastify';
import { ApiError } from '../errors.js';

// Every method Fastify routes: one it routes but a path does not take is 405 there, not 404.
const METHODS: HTTPMethods[] = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE', 'QUERY'];

/**
 * Collects the methods registered for each path, so that `registerMethodNotAllowed` can answer
 * the other methods with 405 and an Allow header, in the Error shape, instead of the router's 404.
 * Call before the routes are registered.
 */
export function collectRouteMethods(app: FastifyInstance): Map<string, Set<string>> {
  const byPath = new Map<string, Set<string>>();
  app.addHook('onRoute', (route) => {
    const set = byPath.get(route.url) ?? new Set<string>();
    for (const m of [route.method].flat()) set.add(m);
    if (set.has('GET')) set.add('HEAD');
    byPath.set(route.url, set);
  });
  return byPath;
}

/** Call after every route is registered. Authentication still runs first (global hook). */
export function registerMethodNotAllowed(app: FastifyInstance, byPath: Map<string, Set<string>>): void {
  for (const [url, methods] of [...byPath]) {
    const others = METHODS.filter((m) => !methods.has(m));
    if (others.length === 0) continue;
    const allow = METHODS.filter((m) => methods.has(m)).join(', ');
    app.route({
      method: others,
      url,
      config: { operation: 'method_not_allowed' },
      // Answered before the body is parsed, so a wrong method is 405 whatever the body holds.
      onRequest: async () => {
        throw new ApiError('method_not_allowed', `Use one of: ${allow}.`, { allow });
      },
      handler: async () => undefined,
    });
  }
}
