import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Authenticator } from '../auth/authenticator.js';
import type { FailureThrottle } from '../auth/throttle.js';
import { hasScope, type Principal, type Scope } from '../domain/api-key.js';
import { ApiError } from '../errors.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Served without authentication (health, readiness, the OpenAPI document). */
    public?: boolean;
  }
  interface FastifyRequest {
    /** The key that authenticated this request; null on public routes. */
    principal: Principal | null;
  }
}

/**
 * Authentication runs in the first onRequest hook, before routing details, body parsing and
 * validation (PD 2.2): whatever else is wrong with an unauthenticated request, it gets 401.
 */
export function registerAuthentication(app: FastifyInstance, authenticator: Authenticator, throttle: FailureThrottle): void {
  app.decorateRequest('principal', null);
  app.addHook('onRequest', async (request) => {
    if (request.routeOptions.config.public) return;
    await authenticateRequest(request, authenticator, throttle);
  });
}

/** Sets request.principal, or throws 429 for a throttled address or 401 (counted as a failure). */
export async function authenticateRequest(request: FastifyRequest, authenticator: Authenticator, throttle: FailureThrottle): Promise<void> {
  const retryAfter = throttle.retryAfter(request.ip);
  if (retryAfter > 0) {
    throw new ApiError('rate_limited', `Too many failed authentications from this address; retry in ${retryAfter} s.`, {
      'retry-after': String(retryAfter),
    });
  }
  try {
    request.principal = await authenticator.authenticate(request.headers.authorization);
  } catch (err) {
    if (err instanceof ApiError && err.code === 'unauthorized') throttle.recordFailure(request.ip);
    throw err;
  }
}

/** A route-level onRequest hook: 403 unless the key holds `scope` (PD 2.5). */
export function requireScope(scope: Scope) {
  return async (request: FastifyRequest): Promise<void> => {
    if (!request.principal || !hasScope(request.principal.scopes, scope)) {
      throw new ApiError('forbidden', `This API key lacks the ${scope} scope that this operation needs.`);
    }
  };
}
