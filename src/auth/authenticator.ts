import { hashKey, KEY_PREFIX, keyUnusableReason, type ApiKeyRecord, type Environment, type Principal } from '../domain/api-key.js';
import { ApiError } from '../errors.js';
import type { ApiKeys } from '../store/store.js';

/** A revocation made on another instance is honoured within this time, well inside the 5 s the service promises. */
export const KEY_CACHE_TTL_MS = 2000;
/** last_used_at is written at most this often per key, so reads do not each cost a disk write. */
export const TOUCH_INTERVAL_MS = 60_000;
const KEY_CACHE_MAX = 10_000;

export const WWW_AUTHENTICATE = 'Bearer realm="inventory"';
export const WWW_AUTHENTICATE_INVALID = 'Bearer realm="inventory", error="invalid_token"';

export const AUTH_MESSAGES = {
  missing: 'Missing API key: send "Authorization: Bearer <key>".',
  scheme: 'Unsupported authorization scheme: send "Authorization: Bearer <key>".',
  invalid: 'The API key is not valid.',
  revoked: 'The API key has been revoked.',
  expired: 'The API key has expired.',
  environment: (accepted: Environment) =>
    `The API key belongs to another environment; this service accepts ${accepted} keys (${KEY_PREFIX[accepted]}...).`,
} as const;

type Deps = Pick<ApiKeys, 'findApiKeyByHash' | 'touchApiKey'>;

/**
 * Turns an Authorization header into a Principal, or the 401 to answer (with WWW-Authenticate,
 * error="invalid_token" once a token was sent). Lookups, unknown keys included, are cached for
 * KEY_CACHE_TTL_MS, so a flood of bad keys does not each reach the store.
 */
export class Authenticator {
  readonly #keys: Deps;
  readonly #environment: Environment;
  readonly #onTouchError: (err: unknown) => void;
  readonly #cache = new Map<string, { record: ApiKeyRecord | undefined; until: number }>();
  readonly #touchedAt = new Map<string, number>();
  /** Lookups under way, by key hash: the requests of one new key share one, so a slow store gets one query, not one per request. */
  readonly #lookups = new Map<string, Promise<ApiKeyRecord | undefined>>();
  /**
   * The last Authorization header each connection sent with a key of this environment, and the key's
   * hash: a client sends the same key with every request on a connection, and hashing it again was a
   * few percent of a read's CPU. Only the hash is remembered, never the lookup: the key is still
   * looked up (cached for KEY_CACHE_TTL_MS) on every request, so a revocation is honoured as before.
   * Kept with the connection's socket, which carried the key anyway, and dropped with it; compared in
   * constant time (sameSecret).
   */
  readonly #hashByConnection = new WeakMap<object, { authorization: string; keyHash: string }>();

  readonly #hash: (token: string) => string;

  /** `hash`: how a key becomes the hash it is stored under (domain hashKey; a test counts the calls). */
  constructor(keys: Deps, environment: Environment, onTouchError: (err: unknown) => void, hash: (token: string) => string = hashKey) {
    this.#keys = keys;
    this.#environment = environment;
    this.#onTouchError = onTouchError;
    this.#hash = hash;
  }

  /**
   * The principal of a usable key, or the 401 to answer. Asks the store when the key's lookup is not
   * cached; a store failure rejects (503): it never lets a request through.
   */
  async authenticate(authorization: string | undefined, connection?: object, now = new Date()): Promise<Principal | ApiError> {
    const keyHash = this.#keyHash(authorization, connection);
    if (keyHash instanceof ApiError) return keyHash;
    const cached = this.#fresh(keyHash, now);
    return this.#principal(cached ? cached.record : await this.#load(keyHash, now.getTime()), now);
  }

  /**
   * The same decision from the cache alone: the principal, or the 401 (no header, a malformed one,
   * a cached unknown or unusable key); undefined when only the store can tell.
   */
  authenticateFromCache(authorization: string | undefined, connection?: object, now = new Date()): Principal | ApiError | undefined {
    const keyHash = this.#keyHash(authorization, connection);
    if (keyHash instanceof ApiError) return keyHash;
    const cached = this.#fresh(keyHash, now);
    return cached && this.#principal(cached.record, now);
  }

  /** The cached lookup of this hash while it is fresh (its record is undefined for an unknown key). */
  #fresh(keyHash: string, now: Date): { record: ApiKeyRecord | undefined } | undefined {
    const cached = this.#cache.get(keyHash);
    return cached && cached.until > now.getTime() ? cached : undefined;
  }

  /**
   * The hash of the header's bearer key, or 401 for no key, another scheme, or a key of another
   * environment or of no known shape. `connection`: the socket the header came on (see #hashByConnection).
   */
  #keyHash(authorization: string | undefined, connection: object | undefined): string | ApiError {
    const seen = connection ? this.#hashByConnection.get(connection) : undefined;
    if (seen !== undefined && authorization !== undefined && sameSecret(seen.authorization, authorization)) return seen.keyHash;
    const token = bearerToken(authorization);
    if (token instanceof ApiError) return token;
    if (!token.startsWith(KEY_PREFIX[this.#environment])) {
      const otherEnv = Object.entries(KEY_PREFIX).find(([, p]) => token.startsWith(p));
      return invalidToken(otherEnv ? AUTH_MESSAGES.environment(this.#environment) : AUTH_MESSAGES.invalid);
    }
    const keyHash = this.#hash(token);
    if (connection) this.#hashByConnection.set(connection, { authorization: authorization!, keyHash });
    return keyHash;
  }

  #principal(record: ApiKeyRecord | undefined, now: Date): Principal | ApiError {
    if (!record || record.environment !== this.#environment) return invalidToken(AUTH_MESSAGES.invalid);
    const unusable = keyUnusableReason(record, now);
    if (unusable) return invalidToken(AUTH_MESSAGES[unusable]);
    this.#touch(record.id, now);
    return { keyId: record.id, keyName: record.name, scopes: record.scopes, expiresAt: record.expiresAt };
  }

  /** The lookup of this hash under way, or a new one. A shared lookup began before the caller asked, so it never makes the caller wait longer than its own would. */
  #load(keyHash: string, nowMs: number): Promise<ApiKeyRecord | undefined> {
    let lookup = this.#lookups.get(keyHash);
    if (!lookup) {
      lookup = this.#lookup(keyHash, nowMs).finally(() => this.#lookups.delete(keyHash));
      this.#lookups.set(keyHash, lookup);
    }
    return lookup;
  }

  /**
   * Drops every cached lookup: each key's next request reads the store, and its lookup is then
   * fresh for KEY_CACHE_TTL_MS. A request within that time never renews it, so whoever needs a key
   * fresh at a given moment (the fast lane's tests) forgets first.
   */
  forget(): void {
    this.#cache.clear();
  }

  async #lookup(keyHash: string, nowMs: number): Promise<ApiKeyRecord | undefined> {
    const record = await this.#keys.findApiKeyByHash(keyHash);
    if (this.#cache.size >= KEY_CACHE_MAX) this.#cache.clear();
    // Unknown hashes are cached too, so a flood of bad keys does not each reach the store.
    this.#cache.set(keyHash, { record, until: nowMs + KEY_CACHE_TTL_MS });
    return record;
  }

  #touch(keyId: string, now: Date): void {
    const last = this.#touchedAt.get(keyId) ?? 0;
    if (now.getTime() - last < TOUCH_INTERVAL_MS) return;
    this.#touchedAt.set(keyId, now.getTime());
    this.#keys.touchApiKey(keyId, now).catch(this.#onTouchError);
  }
}

/**
 * Whether two headers are the same, in a time that does not depend on where they differ: behind a
 * proxy that keeps connections open to the service, one connection carries the requests of many
 * clients, and a comparison that stopped at the first difference would tell one of them how much
 * of another's key it had guessed.
 */
function sameSecret(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  // Every character is compared, whatever the first difference (timingSafeEqual needs two Buffers made per request: as slow as the hash).
  let difference = 0;
  for (let i = 0; i < a.length; i++) difference |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return difference === 0;
}

/** The token of a `Bearer` credential (scheme case-insensitive), or the 401. */
function bearerToken(authorization: string | undefined): string | ApiError {
  if (authorization === undefined || authorization.trim() === '') {
    return new ApiError('unauthorized', AUTH_MESSAGES.missing, { 'www-authenticate': WWW_AUTHENTICATE });
  }
  const match = /^([A-Za-z][A-Za-z0-9!#$%&'*+.^_`|~-]*)(?: +(.*))?$/.exec(authorization.trim());
  if (!match || match[1]!.toLowerCase() !== 'bearer') {
    return new ApiError('unauthorized', AUTH_MESSAGES.scheme, { 'www-authenticate': WWW_AUTHENTICATE });
  }
  const token = (match[2] ?? '').trim();
  if (token === '') return new ApiError('unauthorized', AUTH_MESSAGES.missing, { 'www-authenticate': WWW_AUTHENTICATE });
  return token;
}

function invalidToken(message: string): ApiError {
  return new ApiError('unauthorized', message, { 'www-authenticate': WWW_AUTHENTICATE_INVALID });
}
