import type { Session } from './session.js';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { buildModel, withQuantity, type InventoryModel } from './inventory-model.js';

/** How often the table asks whether the inventory changed; an unchanged inventory costs a 304 with no body. */
export const REFRESH_INTERVAL_MS = 5000;

export interface Inventory {
  model: InventoryModel | null;
  /** When the service last confirmed the table is current (a 200 or a 304). */
  refreshedAt: Date | null;
  /** Why the last load or check failed; null once one succeeds. */
  error: unknown;
  /** Shows a quantity the service confirmed to the page itself (its own save, a conflict's value) before the next refresh. */
  setQuantity: (id: string, quantity: number) => void;
}

/**
 * The inventory, loaded once and then kept current: every few seconds a conditional GET
 * (If-None-Match with the list's ETag). Only a changed list is parsed and rebuilt; a 304 changes
 * nothing but the time shown. A hidden tab does not ask. A refused key ends the session.
 */
export function useInventory({ client, firstList }: Pick<Session, 'client' | 'firstList'>, onKeyRefused: (error: unknown) => void): Inventory {
  const [model, setModel] = useState<InventoryModel | null>(null);
  const [refreshedAt, setRefreshedAt] = useState<Date | null>(null);
  const [error, setError] = useState<unknown>(null);
  const etag = useRef<string | undefined>(undefined);
  const inFlight = useRef(false);
  // The list the sign-in already asked for serves the first check.
  const pending = useRef<Session['firstList'] | null>(firstList);
  // Quantities confirmed since a list was asked for: a list read before a save but answered after it
  // must not show the old count again.
  const confirmed = useRef(new Map<string, { quantity: number; at: number }>());

  const check = useCallback(async () => {
    if (inFlight.current) return;
    inFlight.current = true;
    try {
      const first = pending.current;
      pending.current = null;
      const askedAt = performance.now();
      const answer = await (first ?? client.listInventoryIfChanged(etag.current));
      if (answer.changed) setModel(withConfirmed(buildModel(answer.items), confirmed.current, askedAt));
      etag.current = answer.etag;
      setRefreshedAt(new Date());
      setError(null);
    } catch (err) {
      setError(err);
      onKeyRefused(err);
    } finally {
      inFlight.current = false;
    }
  }, [client, onKeyRefused]);

  useEffect(() => {
    void check();
    const timer = setInterval(() => {
      if (!document.hidden) void check();
    }, REFRESH_INTERVAL_MS);
    // Back to a hidden tab: check at once rather than show what may be minutes old.
    const onVisible = () => {
      if (!document.hidden) void check();
    };
    document.addEventListener('visibilitychange', onVisible);
    return () => {
      clearInterval(timer);
      document.removeEventListener('visibilitychange', onVisible);
    };
  }, [check]);

  const setQuantity = useCallback((id: string, quantity: number) => {
    confirmed.current.set(id, { quantity, at: performance.now() });
    setModel((current) => {
      const index = current?.indexOf.get(id);
      return current && index !== undefined && current.quantities[index] !== quantity ? withQuantity(current, index, quantity) : current;
    });
  }, []);

  return { model, refreshedAt, error, setQuantity };
}

/** The list with every quantity confirmed after it was asked for laid over it; older confirmations are in it already, and forgotten. */
function withConfirmed(model: InventoryModel, confirmed: Map<string, { quantity: number; at: number }>, askedAt: number): InventoryModel {
  let result = model;
  for (const [id, { quantity, at }] of confirmed) {
    if (at <= askedAt) {
      confirmed.delete(id);
      continue;
    }
    const index = result.indexOf.get(id);
    if (index !== undefined && result.quantities[index] !== quantity) result = withQuantity(result, index, quantity);
  }
  return result;
}
