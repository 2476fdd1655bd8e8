/**
 * Performance measures of what staff wait for, readable by anyone with the browser's tools (and by
 * the benchmark): "dashboard:first-rows" from signing in to the first rows in the table,
 * "dashboard:sort" and "dashboard:filter" from the click or keystroke to the re-rendered rows.
 * A measure ends when the rows are in the DOM (a layout effect), before the browser paints them.
 */
export type Measure = 'dashboard:first-rows' | 'dashboard:sort' | 'dashboard:filter';

const started = new Map<Measure, number>();

export function startMeasure(name: Measure): void {
  started.set(name, performance.now());
}

/** Ends the measure if one was started; a render with nothing started records nothing. */
export function endMeasure(name: Measure): void {
  const start = started.get(name);
  if (start === undefined) return;
  started.delete(name);
  performance.measure(name, { start, end: performance.now() });
}
