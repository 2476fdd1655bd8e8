import type { ChangeReason } from '@petstore/inventory-client';
import { useEffect, useLayoutEffect, useRef } from 'preact/hooks';
import { Conflict } from './conflict.js';
import { REASONS, withDelta, withQuantityText, type Edit } from './edits.js';
import { availableOf, MAX_QUANTITY, STATUSES, type InventoryModel } from './inventory-model.js';
import { formatCount } from './messages.js';
import type { EditActions } from './use-edits.js';

interface Props {
  /** Place in the shown order, from 0. */
  position: number;
  model: InventoryModel;
  index: number;
  canWrite: boolean;
  edit: Edit | undefined;
  editing: EditActions;
  showingHistory: boolean;
  onHistory: (petId: bigint) => void;
  /** The row's height while it is edited (its message makes it taller), as the browser lays it out. */
  onEditedHeight: (id: string, height: number) => void;
}

export function Row({ position, model, index, canWrite, edit, editing, showingHistory, onHistory, onEditedHeight }: Props) {
  const id = model.idText[index]!;
  const petId = model.ids[index]!;
  const quantity = model.quantities[index]!;
  const held = model.reserved[index]!;
  const status = STATUSES[model.statuses[index]!]!;

  // When the editor closes (saved, cancelled), focus returns to the row's Edit button rather than to the page.
  const editButton = useRef<HTMLButtonElement>(null);
  const wasEditing = useRef(edit !== undefined);
  useEffect(() => {
    const closed = wasEditing.current && edit === undefined;
    wasEditing.current = edit !== undefined;
    if (closed && (document.activeElement === null || document.activeElement === document.body)) editButton.current?.focus();
  }, [edit]);

  // Only an edited row can grow (by its message below the fields); the table's scroll size follows it.
  const row = useRef<HTMLTableRowElement>(null);
  const isEdited = edit !== undefined;
  useLayoutEffect(() => {
    const tr = row.current;
    if (!isEdited || !tr) return;
    const report = () => onEditedHeight(id, tr.getBoundingClientRect().height);
    report();
    const observer = new ResizeObserver(report);
    observer.observe(tr);
    return () => observer.disconnect();
  }, [isEdited, id, onEditedHeight]);

  const classes = [quantity === 0 ? 'out-of-stock' : '', edit ? 'editing' : '', showingHistory ? 'selected' : ''].filter(Boolean).join(' ');
  return (
    <tr ref={row} class={classes || undefined} aria-rowindex={position + 2} data-pet-id={id}>
      <td class="pet-id">{id}</td>
      {edit ? (
        <Editor id={id} status={status} edit={edit} editing={editing} />
      ) : (
        <>
          <td class="quantity">
            {formatCount(quantity)}
            {quantity === 0 && <span class="badge">Out of stock</span>}
            {/* Only while reservations hold some: otherwise all of the count is available. */}
            {held > 0 && ' '}
            {held > 0 && (
              <span class="held" title={`Reservations hold ${formatCount(held)}; ${formatCount(availableOf(model, index))} left to sell`}>
                {formatCount(held)} held, {formatCount(availableOf(model, index))} available
              </span>
            )}
          </td>
          <td class={`status status-${status}`}>{status}</td>
          <td class="actions">
            <div class="cell-actions">
              {canWrite && (
                <button ref={editButton} type="button" aria-label={`Edit pet ${id}`} onClick={() => editing.open(petId, quantity)}>
                  Edit
                </button>
              )}
              <button type="button" class="secondary" aria-label={`History of pet ${id}`} aria-pressed={showingHistory} onClick={() => onHistory(petId)}>
                History
              </button>
            </div>
          </td>
        </>
      )}
    </tr>
  );
}

interface EditorProps {
  id: string;
  status: string;
  edit: Edit;
  editing: EditActions;
}

/** The row's cells while it is edited: the new count or an add-or-remove, the reason, Save and Cancel; below the fields, why a save did not happen. */
function Editor({ id, status, edit, editing }: EditorProps) {
  const quantityField = useRef<HTMLInputElement>(null);
  // Focus goes to the new count when the editor opens, not each time it scrolls back into view.
  useEffect(() => {
    if (!editing.takeFocus(id, 'editor')) return;
    quantityField.current?.focus();
    quantityField.current?.select();
  }, [id, editing.takeFocus]);

  const ready = edit.etag !== null && !edit.saving && edit.conflict === null;
  const onKeyDown = (event: KeyboardEvent) => {
    if (event.key === 'Escape') {
      event.preventDefault();
      editing.cancel(id);
    } else if (event.key === 'Enter' && ready && event.target instanceof HTMLInputElement) {
      event.preventDefault();
      editing.save(id);
    }
  };
  const { problem, conflict } = edit;
  const messageId = `problem-${id}`;
  const describedBy = problem || conflict ? messageId : undefined;
  return (
    <>
      <td class="quantity" onKeyDown={onKeyDown}>
        <div class="edit-fields">
          <input
            ref={quantityField}
            type="number"
            min={0}
            max={MAX_QUANTITY}
            step={1}
            class="quantity-input"
            aria-label={`Quantity of pet ${id}`}
            aria-invalid={problem?.field === 'quantity'}
            aria-describedby={describedBy}
            value={edit.quantity}
            onInput={(event) => editing.change(id, (e) => withQuantityText(e, event.currentTarget.value))}
          />
          <input
            type="text"
            class="delta-input"
            placeholder="+/−"
            aria-label={`Add or remove for pet ${id}`}
            aria-invalid={problem?.field === 'delta'}
            aria-describedby={describedBy}
            title="Received: +5. Sold: −2."
            value={edit.delta}
            onInput={(event) => editing.change(id, (e) => withDelta(e, event.currentTarget.value))}
          />
        </div>
        {/* Why a save did not happen (decisions 9.7); always there while editing, since a live region added together with its message is often not announced. */}
        <div id={messageId} class="edit-message" role="alert">
          {conflict ? <Conflict id={id} edit={edit} editing={editing} /> : problem?.message}
        </div>
      </td>
      <td class={`status status-${status}`}>{status}</td>
      <td class="actions" onKeyDown={onKeyDown}>
        <div class="cell-actions">
          <select aria-label={`Reason for pet ${id}`} value={edit.reason} onChange={(event) => editing.change(id, (e) => ({ ...e, reason: event.currentTarget.value as ChangeReason }))}>
            {REASONS.map((reason) => (
              <option key={reason} value={reason}>
                {reason}
              </option>
            ))}
          </select>
          {/* aria-disabled, not disabled: a disabled button would drop the keyboard focus to the page while it saves. */}
          <button type="button" aria-disabled={!ready} aria-busy={edit.saving || edit.etag === null} aria-describedby={describedBy} onClick={() => ready && editing.save(id)}>
            Save
          </button>
          <button type="button" class="secondary" onClick={() => editing.cancel(id)}>
            Cancel
          </button>
        </div>
      </td>
    </>
  );
}
