import { useEffect, useRef } from 'preact/hooks';
import { deltaOf, targetQuantity, type Edit } from './edits.js';
import { formatCount } from './messages.js';

interface Props {
  id: string;
  edit: Edit;
  onChoose: (choice: 'theirs' | 'mine' | 'apply') => void;
}

/** Someone else changed the entry while it was being edited: their value, mine, and the choice. */
export function Conflict({ id, edit, onChoose }: Props) {
  // The choice is the user's next step: the keyboard goes there (to the choice that changes nothing).
  const first = useRef<HTMLButtonElement>(null);
  useEffect(() => first.current?.focus(), []);
  if (!edit.conflict) return null;
  const { theirs } = edit.conflict;
  const target = targetQuantity(edit);
  const mine = 'quantity' in target ? formatCount(target.quantity) : edit.quantity;
  const delta = deltaOf(edit);
  return (
    <div class="conflict">
      <p>
        <strong>Pet {id} was changed by someone else</strong> while you edited it. It now holds {formatCount(theirs)}; you were about to save {mine}.
      </p>
      <div class="choices">
        <button ref={first} type="button" class="secondary" onClick={() => onChoose('theirs')}>
          Keep their value
        </button>
        <button type="button" onClick={() => onChoose('mine')}>
          Overwrite with mine
        </button>
        {delta !== null && (
          <button type="button" onClick={() => onChoose('apply')}>
            Apply my change to theirs
          </button>
        )}
      </div>
    </div>
  );
}
