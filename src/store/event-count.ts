import type { EventType } from '../domain/event.js';
import type { EventCount } from './store.js';

/** One type's share of a count: how many, and the last seq among them. */
export type TypeCount = readonly [type: EventType, count: number, last: number];

/** countEvents' answer from each type's share, as every backend reads them (`after` is the last seq when there are none). */
export function eventCountOf(after: number, head: number, shares: Iterable<TypeCount>): EventCount {
  const counted: EventCount = { byType: {}, counted: 0, last: after, head };
  for (const [type, n, last] of shares) {
    counted.byType[type] = (counted.byType[type] ?? 0) + n;
    counted.counted += n;
    counted.last = Math.max(counted.last, last);
  }
  return counted;
}
