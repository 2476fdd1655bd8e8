import type { ImportRow, ImportSource } from '../../domain/import.js';
import { csvReader } from './csv-reader.js';
import type { FileText } from './file-text.js';
import type { ImportFormat } from './format.js';
import { jsonReader } from './json-reader.js';
import { MAX_IMPORT_ERRORS, type ImportError } from './problems.js';
import type { ReadSink } from './reader.js';

/** Entries handed to the store at a time: one transaction, or one COPY, each. */
export const IMPORT_BATCH = 10_000;

/** What the reader made of the file so far. */
export interface ReadLog {
  /** Entries read, good or refused. */
  read: number;
  /** Entries refused. */
  refused: number;
  /** The reader's first problems, in file order (MAX_IMPORT_ERRORS at most). */
  problems: ImportError[];
  /** More problems than those kept were found. */
  moreProblems: boolean;
  /** The file could not be read to its end (its last problem says why). */
  unreadable: boolean;
}

/**
 * The file's entries in batches of IMPORT_BATCH, read as the store asks for them, so memory holds
 * a batch and a piece of the file, never the file; problems are kept in the log as they are found.
 */
export function readInBatches(text: FileText, format: ImportFormat): { source: ImportSource; log: ReadLog } {
  const log: ReadLog = { read: 0, refused: 0, problems: [], moreProblems: false, unreadable: false };
  let rows: ImportRow[] = [];
  const note = (errors: readonly ImportError[]) => {
    for (const error of errors) {
      if (log.problems.length < MAX_IMPORT_ERRORS) log.problems.push(error);
      else log.moreProblems = true;
    }
  };
  const sink: ReadSink = {
    entry(row) {
      log.read++;
      rows.push(row);
    },
    refused(errors) {
      log.read++;
      log.refused++;
      note(errors);
    },
    unreadable(error) {
      log.unreadable = true;
      note([error]);
    },
  };
  const reader = format === 'csv' ? csvReader(sink) : jsonReader(sink);
  const full = function* (all: boolean) {
    while (rows.length >= IMPORT_BATCH || (all && rows.length > 0)) yield rows.splice(0, IMPORT_BATCH);
  };
  async function* batches(): AsyncGenerator<ImportRow[]> {
    for await (const piece of text.pieces) {
      reader.push(piece);
      yield* full(false);
      // Nothing after the problem can be read: the rest of the file is left unread.
      if (log.unreadable) break;
    }
    if (!log.unreadable) reader.end();
    yield* full(true);
    rows = [];
  }
  // A file that cannot be read to its end counts as one refusal: nothing of it is applied.
  return { source: { batches: batches(), refused: () => log.refused + (log.unreadable ? 1 : 0) }, log };
}
