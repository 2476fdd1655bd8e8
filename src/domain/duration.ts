/** Milliseconds per unit of a duration such as "30d" (s, m, h, d, w). */
export const UNIT_MS = {
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
} as const;

/** Longest duration accepted: ten years, far inside the range a Date can hold. */
export const MAX_DURATION_MS = 3650 * UNIT_MS.d;

/** What parseDuration accepts, for messages. */
export const DURATION_FORMAT = 'a whole number followed by s, m, h, d or w (such as 3600s, 90m, 12h, 30d, 2w), at most 3650d';

const DURATION = /^([1-9][0-9]{0,11})([smhdw])$/;

/** Parses "30d", "12h", "90m", "3600s", "2w" into milliseconds; undefined when not one or not in 1s..MAX_DURATION_MS. */
export function parseDuration(text: string): number | undefined {
  const match = DURATION.exec(text);
  if (!match) return undefined;
  const ms = Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
  return ms <= MAX_DURATION_MS ? ms : undefined;
}
