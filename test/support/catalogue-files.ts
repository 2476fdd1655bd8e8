import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { EXPORT_WRITERS } from '../../src/cli/export-format.js';
import type { ImportFormat } from '../../src/cli/import/format.js';
import { INT64_MAX, INT64_MIN } from '../../src/domain/pet-id.js';
import type { InventoryItem } from '../../src/schemas/inventory.js';
import { PET_STATUSES } from '../../src/schemas/values.js';

/**
 * `count` entries by petId ascending, spread over the whole int64 range (both ends and 2^53 + 1
 * among them), with varied quantities and statuses: the same for every run.
 */
export function catalogueItems(count: number): InventoryItem[] {
  const step = (INT64_MAX / BigInt(count)) * 2n;
  const ids = Array.from({ length: count }, (_, i) => INT64_MIN + step * BigInt(i) + BigInt(i % 7));
  ids[0] = INT64_MIN;
  ids[count - 1] = INT64_MAX;
  if (count > 2) ids[count >> 1] = 2n ** 53n + 1n;
  ids.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return ids.map((petId, i) => ({ petId, quantity: (i * 7919) % 100_000, status: PET_STATUSES[i % PET_STATUSES.length]! }));
}

/** Writes `items` to `path` exactly as `pets export` writes them, a page at a time. */
export async function writeCatalogue(path: string, items: readonly InventoryItem[], format: ImportFormat): Promise<void> {
  const writer = EXPORT_WRITERS[format];
  const out = createWriteStream(path);
  const write = async (text: string) => {
    if (!out.write(text)) await once(out, 'drain');
  };
  await write(writer.start);
  const page = 10_000;
  for (let i = 0; i < items.length; i += page) await write(writer.page(items.slice(i, i + page), i === 0));
  await write(writer.end(items.length === 0));
  out.end();
  await once(out, 'finish');
}
