import { InventoryApiError, type InventoryClient } from '@petstore/inventory-client';
import { useCallback, useRef, useState } from 'preact/hooks';
import { deltaOf, newEdit, rebase, targetQuantity, type Edit } from './edits.js';
import { newIdempotencyKey } from './idempotency.js';

export interface EditActions {
  edits: ReadonlyMap<string, Edit>;
  open(petId: bigint, quantity: number): void;
  change(id: string, update: (edit: Edit) => Edit): void;
  cancel(id: string): void;
  save(id: string): void;
  /** After a conflict: keep their value (end the edit), save mine over it, or apply my add-or-remove to it. */
  resolve(id: string, choice: 'theirs' | 'mine' | 'apply'): void;
  /** True once after open(id): the editor then takes the focus. */
  takeFocus: (id: string) => boolean;
}

export interface EditEvents {
  /** A quantity the service confirmed (a save, or a conflict's current value). */
  onQuantity(id: string, quantity: number): void;
  onSaved(id: string, from: number, to: number): void;
  onConflict(id: string): void;
  onError(error: unknown): void;
}

/**
 * Every edit in progress, and the one way a quantity is saved: PATCH with If-Match (the version
 * the edit started from) and an Idempotency-Key, so a double click or a retried request never
 * applies twice, and a change someone else made meanwhile is never overwritten unseen.
 */
export function useEdits(client: InventoryClient, events: EditEvents): EditActions {
  const [edits, setEdits] = useState<ReadonlyMap<string, Edit>>(new Map());
  // The handlers read the latest edits, not the ones of the render that made them.
  const current = useRef(edits);
  current.current = edits;

  const focusPending = useRef<string | null>(null);

  const put = useCallback((id: string, edit: Edit | null) => {
    const next = new Map(current.current);
    if (edit) next.set(id, edit);
    else next.delete(id);
    current.current = next;
    setEdits(next);
  }, []);
  const change = useCallback(
    (id: string, update: (edit: Edit) => Edit) => {
      const edit = current.current.get(id);
      if (edit) put(id, update(edit));
    },
    [put],
  );

  const open = useCallback(
    (petId: bigint, quantity: number) => {
      const id = petId.toString();
      if (current.current.has(id)) return;
      focusPending.current = id;
      put(id, newEdit(petId, quantity));
      // The version to edit: its ETag for If-Match, and its quantity, which may be newer than the table's.
      client.getInventoryItem(petId).then(
        ({ item, etag }) => {
          change(id, (edit) => (edit.etag === null ? rebase(edit, item.quantity, etag) : edit));
          if (item.quantity !== quantity) events.onQuantity(id, item.quantity);
        },
        (error: unknown) => {
          put(id, null);
          events.onError(error);
        },
      );
    },
    [client, put, change, events],
  );

  // Someone else saved first: read what they saved, show it, and let the user choose.
  const showConflict = async (id: string) => {
    const edit = current.current.get(id);
    if (!edit) return;
    try {
      const { item, etag } = await client.getInventoryItem(edit.petId);
      change(id, (e) => ({ ...e, saving: false, conflict: { theirs: item.quantity, etag } }));
      events.onQuantity(id, item.quantity);
      events.onConflict(id);
    } catch (error) {
      change(id, (e) => ({ ...e, saving: false }));
      events.onError(error);
    }
  };

  const send = useCallback(
    async (id: string) => {
      const edit = current.current.get(id);
      if (!edit || edit.saving || edit.etag === null) return;
      const target = targetQuantity(edit);
      if ('problem' in target) return put(id, { ...edit, problem: target.problem });
      const what = `${edit.etag} ${target.quantity} ${edit.reason}`;
      const key = edit.attempt?.of === what ? edit.attempt.key : newIdempotencyKey();
      put(id, { ...edit, saving: true, problem: null, attempt: { key, of: what } });
      try {
        const { item } = await client.updateInventory(edit.petId, { quantity: target.quantity, reason: edit.reason }, { ifMatch: edit.etag, idempotencyKey: key });
        put(id, null);
        events.onQuantity(id, item.quantity);
        events.onSaved(id, edit.base, item.quantity);
      } catch (error) {
        if (error instanceof InventoryApiError && error.code === 'precondition_failed') {
          await showConflict(id);
        } else {
          change(id, (e) => ({ ...e, saving: false }));
          events.onError(error);
        }
      }
    },
    [client, put, change, events],
  );

  const resolve = useCallback(
    (id: string, choice: 'theirs' | 'mine' | 'apply') => {
      const edit = current.current.get(id);
      if (!edit?.conflict) return;
      if (choice === 'theirs') return put(id, null);
      const { theirs, etag } = edit.conflict;
      const delta = deltaOf(edit);
      // "Overwrite" keeps the quantity the user meant; "apply" works their add-or-remove out again from the new value.
      const rebased = choice === 'apply' && delta !== null ? rebase(edit, theirs, etag) : { ...edit, base: theirs, etag };
      put(id, { ...rebased, conflict: null });
      void send(id);
    },
    [put, send],
  );

  return {
    edits,
    open,
    change,
    cancel: useCallback((id: string) => put(id, null), [put]),
    save: useCallback((id: string) => void send(id), [send]),
    resolve,
    takeFocus: useCallback((id: string) => {
      if (focusPending.current !== id) return false;
      focusPending.current = null;
      return true;
    }, []),
  };
}
