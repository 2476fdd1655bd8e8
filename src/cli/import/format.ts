/** The formats `pets import` reads and `pets export` writes. */
export const IMPORT_FORMATS = ['csv', 'json'] as const;
export type ImportFormat = (typeof IMPORT_FORMATS)[number];

/** The only header a CSV file may have. */
export const CSV_HEADER = 'petId,quantity,status';

/** "csv" or "json" from a file name's extension; undefined for any other. */
export function importFormatFromPath(path: string): ImportFormat | undefined {
  const ext = /\.([a-z]+)$/i.exec(path)?.[1]?.toLowerCase();
  return (IMPORT_FORMATS as readonly string[]).includes(ext ?? '') ? (ext as ImportFormat) : undefined;
}
