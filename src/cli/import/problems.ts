import type { Location } from '../../domain/import.js';

/** Problems listed at most; every refused entry is still counted. */
export const MAX_IMPORT_ERRORS = 20;

/** Something wrong in an import file, and where. */
export interface ImportError extends Location {
  /** The entry's field the problem is in, when it is in one. */
  field?: string;
  message: string;
}

/** "line 4" for CSV, "item 3 (line 7)" for JSON. */
export function describeLocation(at: Location): string {
  return at.index === undefined ? `line ${at.line}` : `item ${at.index} (line ${at.line})`;
}

export function formatImportError(error: ImportError): string {
  return `${describeLocation(error)}: ${error.message}`;
}

/** The first problems of a file in file order, at most MAX_IMPORT_ERRORS, from lists that are each in file order. */
export function firstProblems(...lists: readonly (readonly ImportError[])[]): ImportError[] {
  return lists
    .flat()
    .sort((a, b) => a.line - b.line || (a.index ?? 0) - (b.index ?? 0))
    .slice(0, MAX_IMPORT_ERRORS);
}
