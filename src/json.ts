/**
 * JSON text for values that may hold bigint (int64 ids): a bigint is written as its exact
 * digits, which JSON.stringify refuses and a float would round above 2^53. Everything else is
 * written as JSON.stringify would (toJSON honoured, undefined members left out).
 */
export function stringifyJson(value: unknown): string {
  return write(value) ?? 'null';
}

function write(value: unknown): string | undefined {
  if (typeof value === 'bigint') return value.toString();
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return write((value as { toJSON: () => unknown }).toJSON());
  if (Array.isArray(value)) return `[${value.map((v) => write(v) ?? 'null').join(',')}]`;
  const members: string[] = [];
  for (const [key, v] of Object.entries(value)) {
    const text = write(v);
    if (text !== undefined) members.push(`${JSON.stringify(key)}:${text}`);
  }
  return `{${members.join(',')}}`;
}
