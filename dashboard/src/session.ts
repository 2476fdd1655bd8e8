import { createInventoryClient, InventoryApiError, type InventoryClient } from '@petstore/inventory-client';

/**
 * The signed-in key lives in sessionStorage only: it goes when the tab closes, is never shared
 * with other tabs, and is never written to localStorage or a cookie (a cookie would be sent
 * with every request, and make the page open to cross-site request forgery).
 */
const STORAGE_KEY = 'petstore-inventory.api-key';

export interface Session {
  client: InventoryClient;
  keyName: string;
  /** The key may change quantities (scope inventory:write); a read-only key may only look. */
  canWrite: boolean;
  /** The key may see and release reservations (scope reservations:write, or inventory:write, which implies it). */
  canReserve: boolean;
  /** The key may read the webhook endpoints (scope webhooks:manage): the Webhooks panel shows them. */
  canManageWebhooks: boolean;
  /** The first list, asked for with the key check rather than after it: the table fills a round trip sooner. */
  firstList: ReturnType<InventoryClient['listInventoryIfChanged']>;
}

/** The API of the origin that served the page. */
function baseUrl(): string {
  return new URL('/v1', location.href).href;
}

export function storedKey(): string | null {
  try {
    return sessionStorage.getItem(STORAGE_KEY);
  } catch {
    // Storage refused (a privacy setting): the user signs in on every load.
    return null;
  }
}

export function forgetKey(): void {
  try {
    sessionStorage.removeItem(STORAGE_KEY);
  } catch {
    // Nothing was stored.
  }
}

/** The key is checked by asking the service what it is; a key it refuses is never stored. */
export async function signIn(apiKey: string): Promise<Session> {
  const client = createInventoryClient({ baseUrl: baseUrl(), apiKey, retries: 2 });
  const firstList = client.listInventoryIfChanged();
  // A refused key fails both; the key check's error is the one shown.
  firstList.catch(() => {});
  const key = await client.getCallingKey();
  try {
    sessionStorage.setItem(STORAGE_KEY, apiKey);
  } catch {
    // Kept in memory only.
  }
  return {
    client,
    keyName: key.name,
    canWrite: key.scopes.includes('inventory:write'),
    canManageWebhooks: key.scopes.includes('webhooks:manage'),
    canReserve: key.scopes.includes('inventory:write') || key.scopes.includes('reservations:write'),
    firstList,
  };
}

/** True when the service refused the key itself (unknown, revoked, expired): the user must sign in again. */
export function isKeyRefused(error: unknown): boolean {
  return error instanceof InventoryApiError && error.status === 401;
}
