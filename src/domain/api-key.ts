import { hash, randomBytes, randomUUID } from 'node:crypto';
import { SCOPES } from '../schemas/values.js';

export { SCOPES };
export type Scope = (typeof SCOPES)[number];

export const ENVIRONMENTS = ['production', 'staging'] as const;
export type Environment = (typeof ENVIRONMENTS)[number];

/** Key prefixes tell the environments apart, so a staging key is refused by production. */
export const KEY_PREFIX: Record<Environment, string> = {
  production: 'inv_live_',
  staging: 'inv_test_',
};

/** A stored key: everything but the key itself, which is kept only as its SHA-256. */
export interface ApiKeyRecord {
  id: string;
  name: string;
  environment: Environment;
  /** Hex SHA-256 of the whole key. */
  keyHash: string;
  /** The key's last four characters, to tell keys apart in listings. */
  hint: string;
  scopes: Scope[];
  createdAt: Date;
  lastUsedAt: Date | null;
  expiresAt: Date | null;
  revokedAt: Date | null;
}

/** What a request knows about the key that authenticated it. */
export interface Principal {
  keyId: string;
  keyName: string;
  scopes: readonly Scope[];
  /** When the key stops working; null when it never does. A caller is told, so it can ask for a new key in time. */
  expiresAt: Date | null;
}

/** Hex SHA-256 of a key; one call, no hash object (every request hashes its key). */
export function hashKey(key: string): string {
  return hash('sha256', key, 'hex');
}

/** A new random key (256 bits) and the record to store for it. */
export function generateApiKey(input: {
  name: string;
  environment: Environment;
  scopes: Scope[];
  expiresAt: Date | null;
  now?: Date;
}): { key: string; record: ApiKeyRecord } {
  const key = KEY_PREFIX[input.environment] + randomBytes(32).toString('base64url');
  const record: ApiKeyRecord = {
    id: `key_${randomUUID().replaceAll('-', '').slice(0, 20)}`,
    name: input.name,
    environment: input.environment,
    keyHash: hashKey(key),
    hint: key.slice(-4),
    scopes: normaliseScopes(input.scopes),
    createdAt: input.now ?? new Date(),
    lastUsedAt: null,
    expiresAt: input.expiresAt,
    revokedAt: null,
  };
  return { key, record };
}

/** inventory:write implies inventory:read and reservations:write; reservations:write implies inventory:read (decisions 12.1). */
export function hasScope(granted: readonly Scope[], needed: Scope): boolean {
  if (granted.includes(needed)) return true;
  if (needed === 'inventory:read') return granted.includes('inventory:write') || granted.includes('reservations:write');
  return needed === 'reservations:write' && granted.includes('inventory:write');
}

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}

function normaliseScopes(scopes: Scope[]): Scope[] {
  return SCOPES.filter((s) => scopes.includes(s));
}

/** Why a stored key no longer works, or undefined while it does. */
export function keyUnusableReason(record: ApiKeyRecord, now: Date): 'revoked' | 'expired' | undefined {
  if (record.revokedAt !== null) return 'revoked';
  if (record.expiresAt !== null && record.expiresAt.getTime() <= now.getTime()) return 'expired';
  return undefined;
}
