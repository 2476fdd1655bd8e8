import { InventoryApiError } from '@petstore/inventory-client';

/** Any failure as a sentence a person can act on: the service's own message, or what went wrong on the way. */
export function describeError(error: unknown): string {
  if (error instanceof InventoryApiError) {
    if (error.status === 401) return 'The API key was not accepted: it is unknown, revoked or expired. Check it and sign in again.';
    if (error.status === 403) return 'This key is read-only: it may look at the inventory but not change it.';
    if (error.status === 429) return `Too many requests for this key: ${error.message} Wait a moment and try again.`;
    const reference = error.requestId ? ` (request ${error.requestId})` : '';
    return `${error.message}${reference}`;
  }
  if (error instanceof TypeError) return `The service could not be reached: ${error.message}. Check the connection and try again.`;
  return error instanceof Error ? error.message : String(error);
}

/** An integer with the reader's thousands separators. */
export function formatCount(n: number): string {
  return n.toLocaleString();
}
