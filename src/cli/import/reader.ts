import type { ImportRow } from '../../domain/import.js';
import type { ImportError } from './problems.js';

/** Where a reader puts what it finds in a file, entry by entry, in file order. */
export interface ReadSink {
  entry(row: ImportRow): void;
  /** An entry the reader refuses, with every problem it has (at least one). */
  refused(errors: readonly ImportError[]): void;
  /** A problem after which nothing more of the file can be read; the reader takes no more text. */
  unreadable(error: ImportError): void;
}

/** A reader of one format, fed the file's text piece by piece (pieces may split anything), then told it ended. */
export interface FormatReader {
  push(text: string): void;
  end(): void;
}
