import { useCallback, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { InventoryModel, SortColumn, SortOrder } from './inventory-model.js';
import { Row } from './row.js';
import { endMeasure, startMeasure } from './timing.js';
import type { EditActions } from './use-edits.js';
import { useVirtualRows } from './use-virtual-rows.js';

/** Every row is this tall (matches --row-height in styles.css), but an edited one with a message below its fields (decisions 9.6). */
const ROW_HEIGHT = 44;
const EVERY_ROW = () => ROW_HEIGHT;

const COLUMNS: [SortColumn, string][] = [
  ['petId', 'Pet ID'],
  ['quantity', 'Quantity'],
  ['status', 'Status'],
];

interface Props {
  model: InventoryModel;
  /** Model row indexes, in the order shown. */
  rows: Uint32Array;
  sort: SortOrder;
  onSort: (order: SortOrder) => void;
  canWrite: boolean;
  editing: EditActions;
  historyOf: bigint | null;
  onHistory: (petId: bigint) => void;
}

/**
 * A real table (header cells, row and column semantics for assistive technology) of which only
 * the rows in view are in the document; aria-rowcount and aria-rowindex tell the whole size.
 */
export function InventoryTable({ model, rows, sort, onSort, canWrite, editing, historyOf, onHistory }: Props) {
  const scroller = useRef<HTMLDivElement>(null);
  const taller = useTallerRows(editing);
  // While no row is taller (nearly always), one size for all: a sort or a filter then lays nothing out again.
  const sizeOf = useMemo(
    () => (taller.heights.size === 0 ? EVERY_ROW : (position: number) => taller.heights.get(model.idText[rows[position]!]!) ?? ROW_HEIGHT),
    [taller.heights, rows, model.idText],
  );
  const virtual = useVirtualRows(rows.length, sizeOf, () => scroller.current);

  useLayoutEffect(() => {
    if (rows.length > 0) endMeasure('dashboard:first-rows');
    endMeasure('dashboard:sort');
    endMeasure('dashboard:filter');
  }, [rows]);

  const sortBy = (column: SortColumn) => {
    startMeasure('dashboard:sort');
    onSort({ column, descending: sort.column === column ? !sort.descending : false });
  };

  return (
    <div class="table-scroll" ref={scroller} tabIndex={0} role="region" aria-label="Inventory rows (scrollable)">
      <table aria-label="Inventory" aria-rowcount={rows.length + 1}>
        <colgroup>
          <col class="col-id" />
          <col class="col-quantity" />
          <col class="col-status" />
          <col class="col-actions" />
        </colgroup>
        <thead>
          <tr aria-rowindex={1}>
            {COLUMNS.map(([column, label]) => {
              const active = sort.column === column;
              return (
                <th key={column} scope="col" aria-sort={active ? (sort.descending ? 'descending' : 'ascending') : undefined}>
                  <button type="button" class="sort" onClick={() => sortBy(column)}>
                    {label}
                    <span class="sort-mark" aria-hidden="true">
                      {active ? (sort.descending ? '▼' : '▲') : '↕'}
                    </span>
                  </button>
                </th>
              );
            })}
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {virtual.before > 0 && <Spacer height={virtual.before} />}
          {virtual.items.map((item) => {
            const index = rows[item.index]!;
            const id = model.idText[index]!;
            return (
              <Row
                key={id}
                position={item.index}
                model={model}
                index={index}
                canWrite={canWrite}
                edit={editing.edits.get(id)}
                editing={editing}
                showingHistory={historyOf === model.ids[index]}
                onHistory={onHistory}
                onEditedHeight={taller.report}
              />
            );
          })}
          {virtual.after > 0 && <Spacer height={virtual.after} />}
        </tbody>
      </table>
      {rows.length === 0 && <p class="empty">No entries match.</p>}
    </div>
  );
}

/** Stands in for the rows that are not rendered, so the scroll bar tells the truth. */
function Spacer({ height }: { height: number }) {
  return (
    <tr class="spacer" aria-hidden="true">
      <td colSpan={4} style={{ height: `${height}px` }} />
    </tr>
  );
}

/**
 * The heights of the edited rows that are taller than the rest, by pet id, as their rows report
 * them. An edit that ends takes its height with it, whether or not its row is rendered then.
 */
function useTallerRows(editing: EditActions): { heights: ReadonlyMap<string, number>; report: (id: string, height: number) => void } {
  const [heights, setHeights] = useState<ReadonlyMap<string, number>>(new Map());
  const report = useCallback((id: string, height: number) => {
    setHeights((known) => {
      // Half a pixel either way is rounding, not a message.
      const taller = height > ROW_HEIGHT + 0.5 ? height : undefined;
      if (known.get(id) === taller) return known;
      const next = new Map(known);
      if (taller === undefined) next.delete(id);
      else next.set(id, taller);
      return next;
    });
  }, []);
  useLayoutEffect(() => {
    if ([...heights.keys()].every((id) => editing.edits.has(id))) return;
    setHeights(new Map([...heights].filter(([id]) => editing.edits.has(id))));
  }, [editing.edits, heights]);
  return { heights, report };
}
