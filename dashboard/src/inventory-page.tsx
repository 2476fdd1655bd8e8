import { useCallback, useEffect, useMemo, useState } from 'preact/hooks';
import { Counts } from './counts.js';
import { HistoryPanel } from './history-panel.js';
import { filterRows, sortRows, type RowFilter, type SortOrder } from './inventory-model.js';
import { InventoryTable } from './inventory-table.js';
import { describeError, formatCount } from './messages.js';
import { isKeyRefused, type Session } from './session.js';
import { Toolbar } from './toolbar.js';
import { useEdits } from './use-edits.js';
import { useInventory } from './use-inventory.js';
import { ReservationsPanel } from './reservations-panel.js';
import { WebhooksPanel } from './webhooks-panel.js';

interface Props {
  session: Session;
  onSignOut: (why: string | null) => void;
}

export function InventoryPage({ session, onSignOut }: Props) {
  const [sort, setSort] = useState<SortOrder>({ column: 'petId', descending: false });
  const [filter, setFilter] = useState<RowFilter>({ status: null, search: '' });
  const [historyOf, setHistoryOf] = useState<bigint | null>(null);
  const [alert, setAlert] = useState<string | null>(null);
  const [status, setStatus] = useState<string | null>(null);

  const onKeyRefused = useCallback(
    (error: unknown) => {
      if (isKeyRefused(error)) onSignOut(describeError(error));
    },
    [onSignOut],
  );
  const inventory = useInventory(session, onKeyRefused);
  const { model } = inventory;

  const events = useMemo(
    () => ({
      onQuantity: inventory.setQuantity,
      onSaved: (id: string, from: number, to: number) => {
        setAlert(null);
        setStatus(`Saved pet ${id}: ${formatCount(from)} → ${formatCount(to)}`);
      },
      // The row says what went wrong, below its fields; an older message here would only contradict it (decisions 9.7).
      onProblem: (_id: string, error: unknown) => {
        if (error) onKeyRefused(error);
        setStatus(null);
        setAlert(null);
      },
      onError: (error: unknown) => {
        onKeyRefused(error);
        setStatus(null);
        setAlert(describeError(error));
      },
    }),
    [inventory.setQuantity, onKeyRefused],
  );
  const editing = useEdits(session.client, events);

  // An entry retired while it was being edited (the CLI's "pets remove") leaves the table: its edit goes, and the user is told.
  useEffect(() => {
    if (!model) return;
    const gone = [...editing.edits.keys()].filter((id) => !model.indexOf.has(id));
    for (const id of gone) editing.cancel(id);
    if (gone.length > 0) setAlert(`Pet ${gone.join(', ')} is no longer in the inventory: the edit was dropped.`);
    // Only a new list can retire an entry: the effect follows the model alone.
  }, [model]);

  const closeHistory = () => {
    const id = historyOf;
    setHistoryOf(null);
    // Back to the button that opened it, when its row is still rendered.
    if (id !== null) requestAnimationFrame(() => document.querySelector<HTMLButtonElement>(`button[aria-label="History of pet ${id}"]`)?.focus());
  };

  // A save changes one quantity (a new quantities array, the rest shared): only a sort by quantity
  // must run again, and the filter only when the order did. A new list changes every array.
  const sortedBy = sort.column === 'quantity' ? model?.quantities : model?.statuses;
  const sorted = useMemo(() => (model ? sortRows(model, sort) : new Uint32Array(0)), [model?.ids, sortedBy, sort]);
  const rows = useMemo(() => (model ? filterRows(model, sorted, filter) : sorted), [model?.idText, sorted, filter]);

  return (
    <div class="page">
      <header class="page-header">
        <h1>Inventory</h1>
        <p class="who">
          Signed in as <strong>{session.keyName}</strong>
          {session.canWrite ? '' : ' (read-only)'}
        </p>
        <button type="button" class="secondary" onClick={() => onSignOut('Signed out.')}>
          Sign out
        </button>
      </header>
      {!session.canWrite && <p class="note">This key is read-only: you can look but not edit.</p>}
      {model && <Counts counts={model.counts} />}
      <Toolbar filter={filter} onFilter={setFilter} shown={rows.length} total={model?.size ?? 0} refreshedAt={inventory.refreshedAt} refreshError={inventory.error} live={inventory.live} />
      <div role="alert" class="alert">
        {alert}
      </div>
      <div role="status" class="status-message">
        {status}
      </div>
      <div class={historyOf === null ? 'workspace' : 'workspace with-panel'}>
        {model ? (
          <InventoryTable model={model} rows={rows} sort={sort} onSort={setSort} canWrite={session.canWrite} editing={editing} onHistory={setHistoryOf} historyOf={historyOf} />
        ) : (
          <p class="loading">{inventory.error ? `The inventory could not be loaded: ${describeError(inventory.error)}` : 'Loading the inventory…'}</p>
        )}
        {historyOf !== null && <HistoryPanel key={historyOf.toString()} client={session.client} petId={historyOf} onClose={closeHistory} onError={events.onError} />}
      </div>
      <ReservationsPanel session={session} listChanges={inventory.listChanges} onError={onKeyRefused} />
      <WebhooksPanel session={session} onError={onKeyRefused} />
    </div>
  );
}
