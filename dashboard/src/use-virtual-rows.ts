import { elementScroll, observeElementOffset, observeElementRect, Virtualizer, type VirtualItem } from '@tanstack/virtual-core';
import { useLayoutEffect, useReducer, useRef, useState } from 'preact/hooks';

export interface VirtualRows {
  items: VirtualItem[];
  /** Height of the rows above the first rendered one, and below the last. */
  before: number;
  after: number;
  scrollToIndex(index: number): void;
}

/**
 * TanStack Virtual's core, bound to Preact: which of `count` rows are in (or near) the scroll
 * container's view. Only those are rendered; spacer rows above and below keep the scroll bar and the
 * position true. Row heights come from `sizeOf` (the virtualizer measures no element): a new `sizeOf`
 * (give the same function while no height changed) lays every row out again.
 */
export function useVirtualRows(count: number, sizeOf: (index: number) => number, scrollElement: () => HTMLElement | null): VirtualRows {
  const [, rerender] = useReducer((n: number) => n + 1, 0);
  const options = {
    count,
    getScrollElement: scrollElement,
    estimateSize: sizeOf,
    overscan: 10,
    scrollToFn: elementScroll,
    observeElementRect,
    observeElementOffset,
    onChange: () => rerender(undefined),
  };
  const [virtualizer] = useState(() => new Virtualizer<HTMLElement, HTMLTableRowElement>(options));
  virtualizer.setOptions(options);
  useLayoutEffect(() => virtualizer._didMount(), [virtualizer]);
  useLayoutEffect(() => virtualizer._willUpdate());
  // The virtualizer keeps the sizes it worked out until told they changed.
  const laidOut = useRef(sizeOf);
  useLayoutEffect(() => {
    if (laidOut.current === sizeOf) return;
    laidOut.current = sizeOf;
    virtualizer.measure();
  }, [sizeOf]);

  const items = virtualizer.getVirtualItems();
  const total = virtualizer.getTotalSize();
  const before = items[0]?.start ?? 0;
  const after = items.length > 0 ? total - items[items.length - 1]!.end : 0;
  return { items, before, after, scrollToIndex: (index) => virtualizer.scrollToIndex(index, { align: 'auto' }) };
}
