import type { InventoryClient, InventoryEvent } from '@petstore/inventory-client';
import { useEffect, useRef, useState } from 'preact/hooks';
import { withChanges, type EntryChange, type EntryChanges, type InventoryModel } from './inventory-model.js';
import { isKeyRefused } from './session.js';

/** After the stream is refused outright (not cut: a 404 from an older service, a 403), the page polls and asks for it again this much later. */
export const STREAM_RETRY_MS = 30_000;

export interface LiveHandlers {
  /** The stream is live (again), or said the page missed events (a reset): the list is checked once, to close any gap. */
  onLive: () => void;
  /** A batch of changes to lay over the model, in the order they arrived. */
  onChanges: (change: (model: InventoryModel) => InventoryModel) => void;
  /** The stream was refused (a refused key among others: the session ends). */
  onError: (error: unknown) => void;
}

/**
 * Follows the change events (GET /v1/events/stream through the typed client: fetch with the
 * key in the Authorization header, which a browser EventSource cannot send). Events that arrive
 * together are applied as one batch; an event not newer than the version the page last saw of its
 * entry is dropped. The client reconnects after a cut by itself (Last-Event-ID); a refusal is
 * tried again after STREAM_RETRY_MS. Resolves to whether the stream is live now.
 */
export function useLiveEvents(client: InventoryClient, handlers: LiveHandlers): boolean {
  const [live, setLive] = useState(false);
  // The handlers of the latest render, so a new one does not restart the stream.
  const latest = useRef(handlers);
  latest.current = handlers;

  useEffect(() => {
    const stop = new AbortController();
    const { signal } = stop;
    const versions = new Map<string, number>();
    let batch = new Map<string, EntryChange>();
    let flushing: ReturnType<typeof setTimeout> | undefined;
    const flush = () => {
      flushing = undefined;
      const changes: EntryChanges = batch;
      batch = new Map();
      if (!signal.aborted) latest.current.onChanges((model) => withChanges(model, changes));
    };
    const take = ({ type, data }: InventoryEvent) => {
      // A reservation moves what is held of its pets, which the list carries: read it again (usually a 304).
      if ('reservationId' in data) return void latest.current.onLive();
      const id = data.petId.toString();
      if ((versions.get(id) ?? 0) >= data.version) return;
      versions.set(id, data.version);
      batch.set(id, type === 'inventory.deleted' || data.quantity === null ? null : { petId: data.petId, quantity: data.quantity, status: data.status });
      flushing ??= setTimeout(flush, 0);
    };
    const onStatus = ({ state }: { state: 'live' | 'reconnecting' }) => {
      setLive(state === 'live');
      if (state === 'live') latest.current.onLive();
    };

    void (async () => {
      while (!signal.aborted) {
        try {
          for await (const item of client.followEvents({ signal, onStatus })) {
            if (item.type === 'reset') latest.current.onLive();
            else take(item);
          }
        } catch (error) {
          if (signal.aborted) return;
          setLive(false);
          latest.current.onError(error);
          if (isKeyRefused(error)) return;
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, STREAM_RETRY_MS);
            signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
          });
        }
      }
    })();
    return () => {
      stop.abort();
      clearTimeout(flushing);
    };
  }, [client]);

  return live;
}
