import { useEffect, useRef } from 'preact/hooks';
import { targetQuantity, type Edit } from './edits.js';
import { formatCount } from './messages.js';
import type { EditActions } from './use-edits.js';

interface Props {
  id: string;
  edit: Edit;
  editing: EditActions;
}

/** Someone else changed the entry while its count was being set: their value, mine, and the choice, below the row's fields. (An add-or-remove meets no conflict.) */
export function Conflict({ id, edit, editing }: Props) {
  // The choice is the user's next step: the keyboard goes there (to the choice that changes nothing), once, not each time the row scrolls back into view.
  const first = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    if (editing.takeFocus(id, 'conflict')) first.current?.focus();
  }, [id, editing.takeFocus]);
  if (!edit.conflict) return null;
  const { theirs } = edit.conflict;
  const target = targetQuantity(edit);
  const mine = 'quantity' in target ? formatCount(target.quantity) : edit.quantity;
  const choose = (choice: 'theirs' | 'mine') => editing.resolve(id, choice);
  return (
    <div class="conflict">
      <p>
        <strong>Pet {id} was changed by someone else</strong> while you edited it. It now holds {formatCount(theirs)}; you were about to save {mine}.
      </p>
      <div class="choices">
        <button ref={first} type="button" class="secondary" onClick={() => choose('theirs')}>
          Keep their value
        </button>
        <button type="button" onClick={() => choose('mine')}>
          Overwrite with mine
        </button>
      </div>
    </div>
  );
}
