import type { Session } from './session.js';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { buildModel, withQuantity, type InventoryModel } from './inventory-model.js';
import { useLiveEvents } from './use-live-events.js';

/** How often the table asks whether the inventory changed while the stream is not live; an unchanged inventory costs a 304 with no body. */
export const REFRESH_INTERVAL_MS = 5000;

/** Changes the stream brought, as a function of the model they apply to. */
type Change = (model: InventoryModel) => InventoryModel;

export interface Inventory {
  model: InventoryModel | null;
  /** When the table was last known current: a list answered (200 or 304), or a change arrived from the stream. */
  refreshedAt: Date | null;
  /** Why the last load or check failed; null once one succeeds. */
  error: unknown;
  /** True while the stream of changes is open: changes show as they happen and the page does not poll. */
  live: boolean;
  /**
   * Counts the reads of the list that found it changed. What reservations hold is in the list, so a
   * reservation made, ended or expired anywhere moves it: a reservation's event reads the list, and so
   * does the poll.
   */
  listChanges: number;
  /** Shows a quantity the service confirmed to the page itself (its own save, a conflict's value) before the next refresh. */
  setQuantity: (id: string, quantity: number) => void;
}

/**
 * The inventory, loaded once and then kept current by the stream of change events
 * (use-live-events.ts). While the stream is not live (refused, cut, reconnecting), every few
 * seconds a conditional GET (If-None-Match with the list's ETag) instead: only a changed list is
 * parsed and rebuilt; a 304 changes nothing but the time shown. A hidden tab does not poll. A
 * refused key ends the session.
 */
export function useInventory({ client, firstList }: Pick<Session, 'client' | 'firstList'>, onKeyRefused: (error: unknown) => void): Inventory {
  const [model, setModel] = useState<InventoryModel | null>(null);
  const [refreshedAt, setRefreshedAt] = useState<Date | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [listChanges, setListChanges] = useState(0);
  const etag = useRef<string | undefined>(undefined);
  const inFlight = useRef(false);
  // A check asked for while one is in flight runs when it ends: it may be the one that closes a gap (a stream that went live).
  const again = useRef(false);
  // The list the sign-in already asked for serves the first check.
  const pending = useRef<Session['firstList'] | null>(firstList);
  // Quantities confirmed since a list was asked for: a list read before a save but answered after it
  // must not show the old count again.
  const confirmed = useRef(new Map<string, { quantity: number; at: number }>());
  // The stream's changes that arrived while a list was asked for, in order: laid again over the list that answers, which may
  // have been read before them.
  const arrived = useRef<Change[] | null>(null);

  const check = useCallback(async () => {
    if (inFlight.current) {
      again.current = true;
      return;
    }
    inFlight.current = true;
    arrived.current = [];
    try {
      do {
        again.current = false;
        const first = pending.current;
        pending.current = null;
        const askedAt = performance.now();
        const answer = await (first ?? client.listInventoryIfChanged(etag.current));
        if (answer.changed) {
          setModel((arrived.current ?? []).reduce((m, change) => change(m), withConfirmed(buildModel(answer.items), confirmed.current, askedAt)));
          setListChanges((n) => n + 1);
        }
        etag.current = answer.etag;
        setRefreshedAt(new Date());
        setError(null);
      } while (again.current);
    } catch (err) {
      setError(err);
      onKeyRefused(err);
    } finally {
      inFlight.current = false;
      arrived.current = null;
    }
  }, [client, onKeyRefused]);

  const live = useLiveEvents(client, {
    // The stream starts where the list may already be past it, or after it: one check then closes the gap.
    onLive: useCallback(() => void check(), [check]),
    onChanges: useCallback((change: Change) => {
      arrived.current?.push(change);
      setModel((current) => current && change(current));
      setRefreshedAt(new Date());
    }, []),
    onError: onKeyRefused,
  });

  useEffect(() => {
    void check();
  }, [check]);

  useEffect(() => {
    if (live) return;
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
  }, [check, live]);

  const setQuantity = useCallback((id: string, quantity: number) => {
    confirmed.current.set(id, { quantity, at: performance.now() });
    setModel((current) => {
      const index = current?.indexOf.get(id);
      return current && index !== undefined && current.quantities[index] !== quantity ? withQuantity(current, index, quantity) : current;
    });
  }, []);

  return { model, refreshedAt, error, live, listChanges, setQuantity };
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
