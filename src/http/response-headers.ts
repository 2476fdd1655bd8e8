/** Header values both lanes send (app.ts hooks and src/http/fast-lane.ts), defined once. */

export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';
/** On every answer: a browser must not sniff JSON into something else. */
export const NOSNIFF = 'nosniff';
/** Authenticated answers: stock is per-store data, a shared cache must never keep it (PD 6.1). */
export const PRIVATE_CACHE_CONTROL = 'private, no-cache';
/** Error answers are never cached. */
export const ERROR_CACHE_CONTROL = 'no-store';
