import type { InventoryItem } from '../schemas/inventory.js';
import { CSV_HEADER, type ImportFormat } from './import/format.js';

/**
 * The text `pets export` writes, piece by piece: exactly what `pets import` reads (the CSV
 * header and one line per entry; or a JSON array with one entry per line), petIds as their
 * exact digits.
 */
export interface ExportWriter {
  /** The text before the first entry. */
  readonly start: string;
  /** The text of a page of entries, the first page of the file or a later one. */
  page(items: readonly InventoryItem[], first: boolean): string;
  /** The text after the last entry; `empty` when there was none. */
  end(empty: boolean): string;
}

export const EXPORT_WRITERS: Record<ImportFormat, ExportWriter> = {
  csv: {
    start: `${CSV_HEADER}\n`,
    page: (items) => items.map((i) => `${i.petId},${i.quantity},${i.status}\n`).join(''),
    end: () => '',
  },
  json: {
    start: '[',
    page: (items, first) => `${first ? '\n' : ',\n'}${items.map(countJson).join(',\n')}`,
    end: (empty) => (empty ? ']\n' : '\n]\n'),
  },
};

/** An entry as an import reads it back: its count, never what reservations hold (they are no part of a stocktake). */
function countJson(item: InventoryItem): string {
  return `{"petId":${item.petId},"quantity":${item.quantity},"status":"${item.status}"}`;
}
