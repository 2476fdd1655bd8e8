import { performance } from 'node:perf_hooks';
import { ListBody } from '../src/cache/list-body.js';
import type { InventoryItem } from '../src/schemas/inventory.js';

const ROUNDS = 20;

/** Median milliseconds of `fn` over ROUNDS runs. */
function medianMs(fn: () => void): number {
  const times: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const start = performance.now();
    fn();
    times.push(performance.now() - start);
  }
  return times.sort((a, b) => a - b)[ROUNDS >> 1]!;
}

/**
 * What one change costs the cached list (in process, no HTTP): rendering the whole body from
 * scratch against re-rendering it after one PATCH, which serialises one segment and copies
 * the rest. Cost should follow what changed, not the size of the catalogue.
 */
export function listRenderNotes(sizes: readonly number[]): string[] {
  return sizes.map((size) => {
    const items = Array.from({ length: size }, (_, i): InventoryItem => ({ petId: BigInt(i + 1), quantity: i % 1000, status: 'available' }));
    const full = medianMs(() => {
      const body = new ListBody();
      body.reset(items);
      body.render();
    });
    const body = new ListBody();
    body.reset(items);
    body.render();
    let quantity = 0;
    const afterOne = medianMs(() => {
      body.apply([{ petId: BigInt(1 + ((quantity * 7919) % size)), quantity: ++quantity, status: 'available' }]);
      body.render();
    });
    return (
      `List body of ${size.toLocaleString('en-US')} entries: full render ${full.toFixed(2)} ms, ` +
      `re-render after one PATCH ${afterOne.toFixed(2)} ms (${(full / afterOne).toFixed(0)}× less; median of ${ROUNDS})`
    );
  });
}
