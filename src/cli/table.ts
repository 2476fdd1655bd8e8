/** ISO time to the second: enough to tell rows apart, short enough for a table. */
export function formatTime(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** Left-aligned columns two spaces apart, header first. */
export function formatTable(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  return [header, ...rows].map((row) => `${row.map((cell, i) => cell.padEnd(widths[i]!)).join('  ').trimEnd()}\n`).join('');
}
