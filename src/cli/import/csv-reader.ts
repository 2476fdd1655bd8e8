import { tryParsePetId } from '../../domain/pet-id.js';
import { checkEntry, FIELD_NAMES, parseQuantityText, parseStatusText, quoteForMessage, type RawField } from './fields.js';
import { csvRecords } from './csv-records.js';
import { CSV_HEADER } from './format.js';
import type { FormatReader, ReadSink } from './reader.js';

/**
 * CSV: the header `petId,quantity,status`, then one entry per line, as csvRecords reads the text:
 * cells may be quoted and have spaces around them; blank lines are skipped; lines end in LF or
 * CRLF, mixed.
 */
export function csvReader(sink: ReadSink): FormatReader {
  let headerSeen = false;
  let stopped = false;

  const take = (cells: string[], at: number): void => {
    // A blank line, or one of spaces only.
    if (cells.length === 1 && cells[0] === '') return;
    if (!headerSeen) {
      if (cells.length !== FIELD_NAMES.length || cells.some((cell, i) => cell !== FIELD_NAMES[i])) {
        stop({ line: at, message: `the header must be exactly ${CSV_HEADER} (got ${quoteForMessage(cells.join(','))})` });
        return;
      }
      headerSeen = true;
      return;
    }
    if (cells.length !== FIELD_NAMES.length) {
      sink.refused([{ line: at, message: `expected ${FIELD_NAMES.length} cells (${CSV_HEADER}), found ${cells.length}` }]);
      return;
    }
    const [petIdText, quantityText, statusText] = cells as [string, string, string];
    const petId = tryParsePetId(petIdText);
    const quantity = parseQuantityText(quantityText);
    const status = parseStatusText(statusText);
    if (petId !== undefined && quantity !== undefined && status !== undefined) {
      sink.entry({ line: at, item: { petId, quantity, status } });
      return;
    }
    // The slow path, for the messages: every problem of the line.
    const raw = (text: string): RawField => ({ text, got: quoteForMessage(text) });
    const checked = checkEntry({ line: at }, { petId: raw(petIdText), quantity: raw(quantityText), status: raw(statusText) });
    if ('errors' in checked) sink.refused(checked.errors);
  };

  const stop = (error: { line: number; message: string }): void => {
    stopped = true;
    sink.unreadable(error);
  };

  return csvRecords({
    record: take,
    invalid: stop,
    get stopped() {
      return stopped;
    },
  });
}
