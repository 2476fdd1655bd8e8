import { hashKey, KEY_PREFIX, keyUnusableReason, type ApiKeyRecord, type Environment, type Principal } from '../domain/api-key.js';
import { ApiError } from '../errors.js';
import type { InventoryStore } from '../store/store.js';

/** Kept under PD 2.6's 5 s so that a revocation elsewhere is honoured in time. */
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

type Deps = Pick<InventoryStore, 'findApiKeyByHash' | 'touchApiKey'>;

/**
 * Turns an Authorization header into a Principal, or throws 401 (PD 2.1, 2.3). Fails closed:
 * a store error propagates (503), it never lets a request through.
 */
export class Authenticator {
  readonly #store: Deps;
  readonly #environment: Environment;
  readonly #onTouchError: (err: unknown) => void;
  readonly #cache = new Map<string, { record: ApiKeyRecord | undefined; until: number }>();
  readonly #touchedAt = new Map<string, number>();

  constructor(store: Deps, environment: Environment, onTouchError: (err: unknown) => void) {
    this.#store = store;
    this.#environment = environment;
    this.#onTouchError = onTouchError;
  }

  async authenticate(authorization: string | undefined, now = new Date()): Promise<Principal> {
    const keyHash = this.#hashOf(bearerToken(authorization));
    const cached = this.#cache.get(keyHash);
    const record = cached && cached.until > now.getTime() ? cached.record : await this.#load(keyHash, now.getTime());
    return this.#principal(record, now);
  }

  /**
   * The principal when the header's key is cached, usable and of this environment, without
   * waiting on the store; undefined in every other case, where authenticate() has the answer.
   * For the fast lane (src/http/fast-lane.ts), which leaves every refusal to the full path.
   */
  cachedPrincipal(authorization: string | undefined, now = new Date()): Principal | undefined {
    try {
      const cached = this.#cache.get(this.#hashOf(bearerToken(authorization)));
      if (!cached || cached.until <= now.getTime() || !cached.record) return undefined;
      return this.#principal(cached.record, now);
    } catch {
      return undefined;
    }
  }

  /** The key's hash, or 401 for a key of another environment or of no known shape. */
  #hashOf(token: string): string {
    if (!token.startsWith(KEY_PREFIX[this.#environment])) {
      const otherEnv = Object.entries(KEY_PREFIX).find(([, p]) => token.startsWith(p));
      throw invalidToken(otherEnv ? AUTH_MESSAGES.environment(this.#environment) : AUTH_MESSAGES.invalid);
    }
    return hashKey(token);
  }

  #principal(record: ApiKeyRecord | undefined, now: Date): Principal {
    if (!record || record.environment !== this.#environment) throw invalidToken(AUTH_MESSAGES.invalid);
    const unusable = keyUnusableReason(record, now);
    if (unusable) throw invalidToken(AUTH_MESSAGES[unusable]);
    this.#touch(record.id, now);
    return { keyId: record.id, keyName: record.name, scopes: record.scopes };
  }

  async #load(keyHash: string, nowMs: number): Promise<ApiKeyRecord | undefined> {
    const record = await this.#store.findApiKeyByHash(keyHash);
    if (this.#cache.size >= KEY_CACHE_MAX) this.#cache.clear();
    // Unknown hashes are cached too, so a flood of bad keys does not each reach the store.
    this.#cache.set(keyHash, { record, until: nowMs + KEY_CACHE_TTL_MS });
    return record;
  }

  #touch(keyId: string, now: Date): void {
    const last = this.#touchedAt.get(keyId) ?? 0;
    if (now.getTime() - last < TOUCH_INTERVAL_MS) return;
    this.#touchedAt.set(keyId, now.getTime());
    this.#store.touchApiKey(keyId, now).catch(this.#onTouchError);
  }
}

/** The token of a `Bearer` credential (scheme case-insensitive), or throws 401. */
function bearerToken(authorization: string | undefined): string {
  if (authorization === undefined || authorization.trim() === '') {
    throw new ApiError('unauthorized', AUTH_MESSAGES.missing, { 'www-authenticate': WWW_AUTHENTICATE });
  }
  const match = /^([A-Za-z][A-Za-z0-9!#$%&'*+.^_`|~-]*)(?: +(.*))?$/.exec(authorization.trim());
  if (!match || match[1]!.toLowerCase() !== 'bearer') {
    throw new ApiError('unauthorized', AUTH_MESSAGES.scheme, { 'www-authenticate': WWW_AUTHENTICATE });
  }
  const token = (match[2] ?? '').trim();
  if (token === '') {
    throw new ApiError('unauthorized', AUTH_MESSAGES.missing, { 'www-authenticate': WWW_AUTHENTICATE });
  }
  return token;
}

function invalidToken(message: string): ApiError {
  return new ApiError('unauthorized', message, { 'www-authenticate': WWW_AUTHENTICATE_INVALID });
}
