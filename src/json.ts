/**
 * JSON text for values that may hold bigint (int64 ids): bigints are written as their exact
 * digits, which JSON.stringify refuses and a float would round above 2^53.
 */
export function stringifyJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? { [BIGINT_MARK]: v.toString() } : v)).replace(
    BIGINT_PATTERN,
    '$1',
  );
}

const BIGINT_MARK = '\u0000bigint';
const BIGINT_PATTERN = /\{"\\u0000bigint":"(-?\d+)"\}/g;
