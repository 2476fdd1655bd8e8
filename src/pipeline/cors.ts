import type { Answer } from '../operations/answer.js';
import { memoryRule, type Rule } from './pipeline.js';

/** What a browser app may send: the methods of the API and the request headers it reads. */
export const CORS_ALLOW_METHODS = 'GET, PATCH, POST';
export const CORS_ALLOW_HEADERS = 'Authorization, Content-Type, If-Match, If-None-Match, Idempotency-Key, Last-Event-ID, X-Request-Id';
/** The answer headers a browser app may read beyond the CORS-safelisted ones. */
export const CORS_EXPOSE_HEADERS = 'ETag, RateLimit, RateLimit-Policy, Retry-After, X-Request-Id, Idempotent-Replayed, WWW-Authenticate, X-Events-Head';
/** How long a browser may reuse a preflight's answer: short, so a changed allow list takes effect soon. */
export const CORS_MAX_AGE_SECONDS = 600;

/**
 * Cross-origin calls from browser apps on the allowed origins (CORS_ORIGINS, exact matches).
 * First in the list of rules, so that every answer to an allowed origin carries its headers,
 * refusals by later rules (503, 429, 401) included: a browser app can read why it was refused. A
 * preflight (OPTIONS with Origin and Access-Control-Request-Method) from an allowed origin is
 * answered here, 204, without a key: a browser never sends credentials on a preflight (decisions
 * 2.2). A preflight from any other origin is an ordinary OPTIONS request (401 without a key) with no
 * CORS headers, so the browser refuses the call. Every answer says Vary: Origin, so that no cache
 * serves one origin's answer to another.
 */
export function cors(origins: readonly string[]): Rule {
  const allowed = new Set(origins);
  const preflight: Answer = {
    status: 204,
    headers: {
      'access-control-allow-methods': CORS_ALLOW_METHODS,
      'access-control-allow-headers': CORS_ALLOW_HEADERS,
      'access-control-max-age': String(CORS_MAX_AGE_SECONDS),
    },
  };
  return memoryRule('cors', (ctx) => {
    ctx.answerHeaders.vary = 'Origin';
    const origin = ctx.headers.origin;
    if (origin === undefined || !allowed.has(origin)) return undefined;
    ctx.answerHeaders['access-control-allow-origin'] = origin;
    ctx.answerHeaders['access-control-expose-headers'] = CORS_EXPOSE_HEADERS;
    if (ctx.method !== 'OPTIONS' || ctx.headers['access-control-request-method'] === undefined) return undefined;
    ctx.operation = 'cors_preflight';
    return preflight;
  });
}
