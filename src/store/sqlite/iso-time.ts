/** The last time formatted, and its text: a batch's changes mostly share a millisecond, and each change's history row, entry and event write it. */
let lastTime = Number.NaN;
let lastText = '';

/** date.toISOString(), formatted once for a run of dates of the same millisecond (the writer's hot path). */
export function isoTime(date: Date): string {
  const time = date.getTime();
  if (time !== lastTime) {
    lastText = date.toISOString();
    lastTime = time;
  }
  return lastText;
}
