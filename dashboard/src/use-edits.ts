import { InventoryApiError, type InventoryClient } from '@petstore/inventory-client';
import { useCallback, useRef, useState } from 'preact/hooks';
import { newEdit, rebase, savePlan, type Edit } from './edits.js';
import { newIdempotencyKey } from './idempotency.js';
import { describeError } from './messages.js';

export interface EditActions {
  edits: ReadonlyMap<string, Edit>;
  open(petId: bigint, quantity: number): void;
  change(id: string, update: (edit: Edit) => Edit): void;
  cancel(id: string): void;
  save(id: string): void;
  /** After a conflict (a count set over someone else's change): keep their value (end the edit), or save mine over it. */
  resolve(id: string, choice: 'theirs' | 'mine'): void;
  /** True once after open(id) (part 'editor') or a conflict (part 'conflict'): that part of the row then takes the focus. */
  takeFocus: (id: string, part: FocusPart) => boolean;
}

/** What of an edited row takes the keyboard focus: the new count when it opens, the choice after a conflict. */
export type FocusPart = 'editor' | 'conflict';

export interface EditEvents {
  /** A quantity the service confirmed (a save, or a conflict's current value). */
  onQuantity(id: string, quantity: number): void;
  /** A save went through. */
  onSaved(id: string, from: number, to: number): void;
  /** An edit now shows a problem or a conflict beside its fields, so what the page said before is stale; `error` is the failure behind it, if any. */
  onProblem(id: string, error: unknown): void;
  /** The editor could not open: its entry could not be read. */
  onError(error: unknown): void;
}

/**
 * Every edit in progress, and the two ways a count is saved, each with an Idempotency-Key, so a
 * double click or a retried request never applies twice: a typed count is a PATCH with If-Match
 * (the version the edit started from), so a change someone else made meanwhile is never
 * overwritten unseen; an add-or-remove is an adjustment, which the service applies to the count it
 * holds, so it meets no conflict, only a refusal when it would take the count below 0.
 */
export function useEdits(client: InventoryClient, events: EditEvents): EditActions {
  const [edits, setEdits] = useState<ReadonlyMap<string, Edit>>(new Map());
  // The handlers read the latest edits, not the ones of the render that made them.
  const current = useRef(edits);
  current.current = edits;

  const focusPending = useRef<{ id: string; part: FocusPart } | null>(null);

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
      focusPending.current = { id, part: 'editor' };
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

  // A save that did not happen: the reason goes beside the row's fields.
  const fail = useCallback(
    (id: string, error: unknown) => {
      change(id, (e) => ({ ...e, saving: false, problem: { message: describeError(error), field: null } }));
      events.onProblem(id, error);
    },
    [change, events],
  );

  // Someone else saved first: read what they saved, show it, and let the user choose.
  const showConflict = async (id: string) => {
    const edit = current.current.get(id);
    if (!edit) return;
    try {
      const { item, etag } = await client.getInventoryItem(edit.petId);
      focusPending.current = { id, part: 'conflict' };
      change(id, (e) => ({ ...e, saving: false, conflict: { theirs: item.quantity, etag } }));
      events.onQuantity(id, item.quantity);
      events.onProblem(id, null);
    } catch (error) {
      fail(id, error);
    }
  };

  // An add-or-remove refused by the stock on hand: the service's words beside it, and the count the row holds now.
  const refuseStock = useCallback(
    (id: string, error: unknown) => {
      // A new key for the next try: the service keeps this refusal as the answer to this one.
      change(id, (e) => ({ ...e, saving: false, attempt: null, problem: { message: describeError(error), field: 'delta' } }));
      events.onProblem(id, error);
      const edit = current.current.get(id);
      if (!edit) return;
      client.getInventoryItem(edit.petId).then(
        ({ item, etag }) => {
          change(id, (e) => rebase(e, item.quantity, etag));
          events.onQuantity(id, item.quantity);
        },
        // The refusal is what the user needs to read; the row follows with the next change or list.
        () => undefined,
      );
    },
    [client, change, events],
  );

  const send = useCallback(
    async (id: string) => {
      const edit = current.current.get(id);
      if (!edit || edit.saving || edit.etag === null) return;
      const plan = savePlan(edit);
      if ('problem' in plan) {
        put(id, { ...edit, problem: plan.problem });
        return events.onProblem(id, null);
      }
      // The same save again (its answer lost) reuses its key; an adjustment is the same whatever version it was typed on.
      const what = 'adjust' in plan ? `adjust ${plan.adjust} ${edit.reason}` : `${edit.etag} ${plan.quantity} ${edit.reason}`;
      const key = edit.attempt?.of === what ? edit.attempt.key : newIdempotencyKey();
      put(id, { ...edit, saving: true, problem: null, attempt: { key, of: what } });
      try {
        const { item } =
          'adjust' in plan
            ? await client.adjustInventory(edit.petId, { delta: plan.adjust, reason: edit.reason }, { idempotencyKey: key })
            : await client.updateInventory(edit.petId, { quantity: plan.quantity, reason: edit.reason }, { ifMatch: edit.etag, idempotencyKey: key });
        put(id, null);
        events.onQuantity(id, item.quantity);
        // From what the entry held when the change applied, which may not be the version the edit read.
        events.onSaved(id, 'adjust' in plan ? item.quantity - plan.adjust : edit.base, item.quantity);
      } catch (error) {
        if (error instanceof InventoryApiError && error.code === 'precondition_failed') {
          await showConflict(id);
        } else if (error instanceof InventoryApiError && error.code === 'insufficient_stock') {
          refuseStock(id, error);
        } else {
          fail(id, error);
        }
      }
    },
    [client, put, fail, refuseStock, events],
  );

  const resolve = useCallback(
    (id: string, choice: 'theirs' | 'mine') => {
      const edit = current.current.get(id);
      if (!edit?.conflict) return;
      if (choice === 'theirs') return put(id, null);
      const { theirs, etag } = edit.conflict;
      // "Overwrite" keeps the quantity the user meant, now over their version.
      put(id, { ...edit, base: theirs, etag, conflict: null });
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
    takeFocus: useCallback((id: string, part: FocusPart) => {
      if (focusPending.current?.id !== id || focusPending.current.part !== part) return false;
      focusPending.current = null;
      return true;
    }, []),
  };
}
